import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { Valid } from '../../src/mesh/index.js';
import type { Policy } from '../../src/policies/index.js';
import type { MeshState, Stored } from '../../src/store/types.js';
import { stored, storedDataplane, valid } from './fixtures.js';

const EXAMPLES = path.resolve(import.meta.dirname, '../fixtures/kuma-examples');
/** A Kuma example of test/fixtures/kuma-examples, as written. */
export const kuma = (file: string) => parse(readFileSync(path.join(EXAMPLES, file), 'utf8')) as Record<string, unknown>;

/** The Kuma examples' topology: frontend-1 (an Envoy calling echo), three echo backends, and a proxyless client. */
export const dataplanes = () => [
  storedDataplane({
    name: 'frontend-1',
    address: '10.0.0.1',
    inbound: [{ port: 10001, servicePort: 9001, tags: { service: 'frontend', app: 'frontend', protocol: 'http' } }],
    outbound: [{ port: 20001, service: 'echo' }],
  }),
  storedDataplane({ name: 'echo-v1a', address: '10.0.0.2', inbound: [{ port: 8080, tags: { service: 'echo', version: 'v1', protocol: 'http' } }] }),
  storedDataplane({ name: 'echo-v1b', address: '10.0.0.3', inbound: [{ port: 8080, tags: { service: 'echo', version: 'v1', protocol: 'http' } }] }),
  storedDataplane({ name: 'echo-v2', address: '10.0.0.4', inbound: [{ port: 8080, tags: { service: 'echo', version: 'v2', protocol: 'http' } }] }),
  storedDataplane({ name: 'grpc-client', address: '10.0.0.9', inbound: [{ port: 7000, tags: { service: 'frontend', app: 'frontend' } }] }),
];

/** A MeshHTTPRoute `name` sending every call to `service` to its `version: v1` and `v2` endpoints by `weights`: a canary, as Kuma writes it. */
export const versionSplit = (name: string, service: string, weights: readonly [number, number]) => ({
  type: 'MeshHTTPRoute',
  mesh: 'default',
  name,
  spec: {
    targetRef: { kind: 'Mesh' },
    to: [
      {
        targetRef: { kind: 'MeshService', name: service },
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/' } }],
            default: {
              backendRefs: [
                { kind: 'MeshServiceSubset', name: service, tags: { version: 'v1' }, weight: weights[0] },
                { kind: 'MeshServiceSubset', name: service, tags: { version: 'v2' }, weight: weights[1] },
              ],
            },
          },
        ],
      },
    ],
  },
});

/** Kuma's MeshHTTPRoute sending every call to `service` on to another service, `to`. */
export const sendTo = (name: string, service: string, to: string) => ({
  type: 'MeshHTTPRoute',
  mesh: 'default',
  name,
  spec: {
    targetRef: { kind: 'Mesh' },
    to: [{ targetRef: { kind: 'MeshService', name: service }, rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }], default: { backendRefs: [{ kind: 'MeshService', name: to, weight: 100 }] } }] }],
  },
});

/** A mesh state with these policies, as the projection folds them. */
export function withPolicies(state: MeshState, policies: readonly unknown[]): MeshState {
  const held = policies.map((input) => stored(valid(input) as Valid<Policy>) as Stored<Policy>);
  return { ...state, policies: new Map(held.map((policy) => [`${policy.resource.type}/${policy.resource.name}`, policy])) };
}

