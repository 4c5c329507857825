/**
 * What a control plane uses for each option left out; `chancery run` shows and uses the same.
 * A leaf: it imports nothing, so every layer can read its defaults.
 */
export const DEFAULTS = {
  xdsAddress: '0.0.0.0:5678',
  apiAddress: '127.0.0.1:5681',
  store: 'pglite:./.chancery/data',
  refreshInterval: 1_000,
  evictionGrace: 10_000,
  retention: 'off',
  recordInterval: 1_000,
  instanceTtl: 15_000,
  maxConnectionAge: 'off',
  drainPeriod: 5_000,
  tlsReloadInterval: 1_000,
} as const;
