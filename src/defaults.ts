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
  pregenerate: true,
  /**
   * Generous for real clients: an Envoy sends a handful of requests in a burst on connect and
   * one stream per connection; a valid node id has at most 127 characters; Istio's node
   * metadata is a few KB, a few levels deep. The message size is grpc-js's own default.
   */
  xdsLimits: {
    maxNodeIdLength: 256,
    maxNodeMetadataBytes: 64 * 1024,
    maxNodeMetadataDepth: 16,
    maxResourceNames: 10_000,
    maxRequestBytes: 4 * 1024 * 1024,
    maxStreamsPerConnection: 100,
    maxRequestsPerSecond: 100,
  },
} as const;
