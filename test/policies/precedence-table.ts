/**
 * A table of overlapping policies and, per node and service called, the effective result with
 * the policy that set each field and those that lost: MADR 005's UpstreamTimeout example as
 * MeshTimeouts, plus a MeshSubset, an equal-kind pair decided by name, lists replaced, and
 * routes of two MeshHTTPRoutes. Checked against src/policies directly (precedence.test.ts)
 * and against `GET …/policies` (explanation.test.ts).
 */

const mesh = 'default';
const timeout = (name: string, targetRef: object, to: object[]) => ({ type: 'MeshTimeout', mesh, name, spec: { targetRef, to } });
const toAll = (conf: object) => ({ targetRef: { kind: 'Mesh' }, default: conf });
const toService = (service: string, conf: object) => ({ targetRef: { kind: 'MeshService', name: service }, default: conf });

export const POLICIES: readonly Record<string, unknown>[] = [
  timeout('00-base-timeouts', { kind: 'Mesh' }, [toAll({ connectionTimeout: '10s', http: { requestTimeout: '5s', streamIdleTimeout: '1h' } })]),
  timeout('01-consume-backend-timeouts', { kind: 'Mesh' }, [toService('backend', { connectionTimeout: '20s', http: { streamIdleTimeout: '0s' } })]),
  timeout('web-timeouts', { kind: 'MeshService', name: 'web' }, [toAll({ connectionTimeout: '5s' }), toService('backend', { http: { requestTimeout: '15s' } })]),
  timeout('canary-timeouts', { kind: 'MeshSubset', tags: { version: 'v2' } }, [toAll({ http: { requestTimeout: '2s' } })]),
  // Same kinds as 00-base-timeouts: the lexicographically smaller name (00-…) wins.
  timeout('zz-late-timeouts', { kind: 'Mesh' }, [toAll({ http: { requestTimeout: '9s' } })]),
  {
    type: 'MeshRetry',
    mesh,
    name: 'retry-all',
    spec: { targetRef: { kind: 'Mesh' }, to: [toAll({ http: { numRetries: 2, retryOn: ['5xx', 'Reset'] } })] },
  },
  {
    type: 'MeshRetry',
    mesh,
    name: 'web-retry-backend',
    spec: { targetRef: { kind: 'MeshService', name: 'web' }, to: [toService('backend', { http: { retryOn: ['GatewayError'] } })] },
  },
  {
    type: 'MeshHTTPRoute',
    mesh,
    name: 'backend-v1-by-default',
    spec: {
      targetRef: { kind: 'Mesh' },
      to: [
        {
          targetRef: { kind: 'MeshService', name: 'backend' },
          rules: [
            { matches: [{ path: { type: 'PathPrefix', value: '/' } }], default: { backendRefs: [{ kind: 'MeshServiceSubset', name: 'backend', tags: { version: 'v1' } }] } },
            { matches: [{ path: { type: 'PathPrefix', value: '/api' } }], default: { backendRefs: [{ kind: 'MeshService', name: 'backend' }] } },
          ],
        },
      ],
    },
  },
  {
    type: 'MeshHTTPRoute',
    mesh,
    name: 'web-backend-canary',
    spec: {
      targetRef: { kind: 'MeshService', name: 'web' },
      to: [
        {
          targetRef: { kind: 'MeshService', name: 'backend' },
          rules: [
            {
              matches: [{ path: { type: 'PathPrefix', value: '/' } }],
              default: {
                backendRefs: [
                  { kind: 'MeshServiceSubset', name: 'backend', tags: { version: 'v1' }, weight: 90 },
                  { kind: 'MeshServiceSubset', name: 'backend', tags: { version: 'v2' }, weight: 10 },
                ],
              },
            },
            { matches: [{ path: { type: 'Exact', value: '/health' } }], default: { backendRefs: [] } },
          ],
        },
      ],
    },
  },
];

/** The nodes of the table: name, inbound tags (none for a pure client). */
export const NODES: Readonly<Record<string, Readonly<Record<string, string>> | undefined>> = {
  'web-1': { service: 'web', version: 'v1' },
  'web-2': { service: 'web', version: 'v2' },
  'other-1': { service: 'other' },
  client: undefined,
};

/** `path: value ← policy (lost: …)`, one line per field of the effective configuration. */
export type Expected = readonly string[];

export const EXPECTED_TIMEOUTS: Readonly<Record<string, Readonly<Record<string, Expected>>>> = {
  'web-1': {
    backend: [
      'connectionTimeout: 5s ← web-timeouts (lost: 00-base-timeouts, 01-consume-backend-timeouts)',
      'http.requestTimeout: 15s ← web-timeouts (lost: 00-base-timeouts, zz-late-timeouts)',
      'http.streamIdleTimeout: 0s ← 01-consume-backend-timeouts (lost: 00-base-timeouts)',
    ],
    payments: [
      'connectionTimeout: 5s ← web-timeouts (lost: 00-base-timeouts)',
      'http.requestTimeout: 5s ← 00-base-timeouts (lost: zz-late-timeouts)',
      'http.streamIdleTimeout: 1h ← 00-base-timeouts',
    ],
  },
  'web-2': {
    backend: [
      'connectionTimeout: 5s ← web-timeouts (lost: 00-base-timeouts, 01-consume-backend-timeouts)',
      'http.requestTimeout: 15s ← web-timeouts (lost: 00-base-timeouts, canary-timeouts, zz-late-timeouts)',
      'http.streamIdleTimeout: 0s ← 01-consume-backend-timeouts (lost: 00-base-timeouts)',
    ],
    payments: [
      'connectionTimeout: 5s ← web-timeouts (lost: 00-base-timeouts)',
      'http.requestTimeout: 2s ← canary-timeouts (lost: 00-base-timeouts, zz-late-timeouts)',
      'http.streamIdleTimeout: 1h ← 00-base-timeouts',
    ],
  },
  'other-1': {
    backend: [
      'connectionTimeout: 20s ← 01-consume-backend-timeouts (lost: 00-base-timeouts)',
      'http.requestTimeout: 5s ← 00-base-timeouts (lost: zz-late-timeouts)',
      'http.streamIdleTimeout: 0s ← 01-consume-backend-timeouts (lost: 00-base-timeouts)',
    ],
  },
  client: {
    payments: ['connectionTimeout: 10s ← 00-base-timeouts', 'http.requestTimeout: 5s ← 00-base-timeouts (lost: zz-late-timeouts)', 'http.streamIdleTimeout: 1h ← 00-base-timeouts'],
  },
};

/** Lists are replaced, not appended (MADR 017); a service-level retry leaves other outbounds' alone (kuma#6426). */
export const EXPECTED_RETRIES: Readonly<Record<string, Readonly<Record<string, Expected>>>> = {
  'web-1': {
    backend: ['http.numRetries: 2 ← retry-all', 'http.retryOn: GatewayError ← web-retry-backend (lost: retry-all)'],
    payments: ['http.numRetries: 2 ← retry-all', 'http.retryOn: 5xx,Reset ← retry-all'],
  },
  'other-1': { backend: ['http.numRetries: 2 ← retry-all', 'http.retryOn: 5xx,Reset ← retry-all'] },
};

/** Routes, most specific first: `match → backends and weights (the service itself when none) ← policy (lost: …)`. */
export const EXPECTED_ROUTES: Readonly<Record<string, Expected>> = {
  'web-1': [
    'Exact /health → backend ← web-backend-canary',
    'PathPrefix /api → backend 1 ← backend-v1-by-default',
    'PathPrefix / → backend{version=v1} 90, backend{version=v2} 10 ← web-backend-canary (lost: backend-v1-by-default)',
  ],
  'other-1': ['PathPrefix /api → backend 1 ← backend-v1-by-default', 'PathPrefix / → backend{version=v1} 1 ← backend-v1-by-default'],
};
