import { describe, expect, it } from 'vitest';
import { generate } from '../../src/mesh/generator.js';
import type { Projection } from '../../src/store/types.js';
import type { Snapshot } from '../../src/xds/snapshot.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, type TypeUrl } from '../../src/xds/type-urls.js';
import { decode, meshState, projection, storedMesh, type Decoded } from './fixtures.js';
import { dataplanes, kuma, withPolicies } from './policy-fixtures.js';

const base = meshState(storedMesh(), dataplanes());
const at = (policies: readonly unknown[], state = base): Projection => projection(9, withPolicies(state, policies));

function snapshotOf(projected: Projection, node = 'default.frontend-1'): Snapshot {
  const result = generate(node, projected);
  if (!result.ok) throw result.error;
  return result.snapshot;
}

function get(snapshot: Snapshot, typeUrl: TypeUrl, name: string): Decoded & Record<string, any> {
  const resource = snapshot.types[typeUrl].get(name);
  if (resource === undefined) throw new Error(`${typeUrl} ${name} is not in the snapshot`);
  return decode(resource).message as Decoded & Record<string, any>;
}

const envoyRoutes = (snapshot: Snapshot) => get(snapshot, ROUTE, 'outbound:127.0.0.1:20001').virtual_hosts[0].routes as Array<Record<string, any>>;
const grpcRoutes = (snapshot: Snapshot) => get(snapshot, ROUTE, 'echo').virtual_hosts[0].routes as Array<Record<string, any>>;
const endpointsOf = (snapshot: Snapshot, name: string) =>
  (get(snapshot, ENDPOINT, name).endpoints[0]?.lb_endpoints ?? []).map((each: any) => each.endpoint.address.socket_address.address).sort();

describe('policies rendered for Envoy (every field)', () => {
  it('splits 90/10 between subsets v1 and v2 with weighted clusters, each subset its own EDS cluster of its endpoints', () => {
    const snapshot = snapshotOf(at([kuma('meshhttproute-split.yaml')]));
    const [split, catchAll] = envoyRoutes(snapshot);
    expect(split).toMatchObject({
      match: { prefix: '/' },
      route: { weighted_clusters: { clusters: [{ name: 'echo:version=v1', weight: { value: 90 } }, { name: 'echo:version=v2', weight: { value: 10 } }] } },
    });
    expect(catchAll).toEqual({ match: { prefix: '/' }, route: { cluster: 'echo' } });
    expect(get(snapshot, CLUSTER, 'echo:version=v2')).toMatchObject({ type: 'EDS', eds_cluster_config: { service_name: 'echo:version=v2' } });
    expect(snapshot.types[CLUSTER].wildcard.get('echo:version=v1')).toBeDefined();
    expect(endpointsOf(snapshot, 'echo:version=v1')).toEqual(['10.0.0.2', '10.0.0.3']);
    expect(endpointsOf(snapshot, 'echo:version=v2')).toEqual(['10.0.0.4']);
  });

  it('routes a path prefix to v2 only, as Kuma does: the exact path and everything under it, then the rest to the service', () => {
    const routes = envoyRoutes(snapshotOf(at([kuma('meshhttproute-prefix-v2.yaml')])));
    expect(routes.map(({ match, route }) => [match, route.cluster])).toEqual([
      [{ path: '/v2' }, 'echo:version=v2'],
      [{ prefix: '/v2/' }, 'echo:version=v2'],
      [{ prefix: '/' }, 'echo'],
    ]);
  });

  it('puts MeshTimeout on the route (request timeout), the cluster (connect timeout) and the connection manager (idle timeout)', () => {
    const snapshot = snapshotOf(at([kuma('meshtimeout.yaml')]));
    expect(envoyRoutes(snapshot).at(-1)!.route).toMatchObject({ cluster: 'echo', timeout: { seconds: 1 } });
    expect(get(snapshot, CLUSTER, 'echo').connect_timeout).toEqual({ seconds: 2 });
    const hcm = get(snapshot, LISTENER, 'outbound:127.0.0.1:20001').filter_chains[0].filters[0].typed_config;
    expect(hcm.common_http_protocol_options).toEqual({ idle_timeout: { seconds: 20 } });
  });

  it('puts MeshRetry on every route and MeshCircuitBreaker on the cluster', () => {
    const snapshot = snapshotOf(at([kuma('meshretry.yaml'), kuma('meshcircuitbreaker.yaml')]));
    expect(envoyRoutes(snapshot).at(-1)!.route.retry_policy).toEqual({ retry_on: '5xx', num_retries: { value: 5 } });
    expect(get(snapshot, CLUSTER, 'echo').circuit_breakers).toEqual({
      thresholds: [{ priority: 'DEFAULT', max_connections: { value: 2 }, max_pending_requests: { value: 8 }, max_requests: { value: 2 }, max_retries: { value: 2 } }],
    });
  });

  it('enforces only the outlier detectors a policy sets, consecutive 5xx included', () => {
    const policy = {
      type: 'MeshCircuitBreaker',
      mesh: 'default',
      name: 'eject',
      spec: { targetRef: { kind: 'Mesh' }, to: [{ targetRef: { kind: 'Mesh' }, default: { outlierDetection: { interval: '1s', baseEjectionTime: '30s', maxEjectionPercent: 50, detectors: { totalFailures: { consecutive: 3 } } } } }] },
    };
    expect(get(snapshotOf(at([policy])), CLUSTER, 'echo').outlier_detection).toEqual({
      interval: { seconds: 1 },
      base_ejection_time: { seconds: 30 },
      max_ejection_percent: { value: 50 },
      consecutive_5xx: { value: 3 },
      enforcing_consecutive_5xx: { value: 100 },
      enforcing_consecutive_gateway_failure: { value: 0 },
      enforcing_success_rate: { value: 0 },
      enforcing_failure_percentage: { value: 0 },
    });
  });
});

describe('policies rendered for proxyless gRPC (only what it honours, never what it NACKs)', () => {
  const grpc = (policies: readonly unknown[]) => snapshotOf(at(policies), 'default.grpc-client');

  it('splits with weighted clusters summing to 100, and keeps the shared Listener with no idle_timeout', () => {
    const split = { ...kuma('meshhttproute-split.yaml'), spec: { ...(kuma('meshhttproute-split.yaml').spec as object), targetRef: { kind: 'Mesh' } } };
    const odd = structuredClone(split) as any;
    odd.spec.to[0].rules[0].default.backendRefs[0].weight = 1;
    odd.spec.to[0].rules[0].default.backendRefs[1].weight = 2;
    expect(grpcRoutes(grpc([split]))[0]!.route.weighted_clusters.clusters).toEqual([
      { name: 'echo:version=v1', weight: { value: 90 } },
      { name: 'echo:version=v2', weight: { value: 10 } },
    ]);
    expect(grpcRoutes(grpc([odd]))[0]!.route.weighted_clusters.clusters.map((each: any) => each.weight.value)).toEqual([33, 67]);
    const withPolicy = grpc([split]);
    expect(withPolicy.types[LISTENER].get('echo')).toBe(snapshotOf(at([]), 'default.grpc-client').types[LISTENER].get('echo'));
    expect(JSON.stringify(get(withPolicy, LISTENER, 'echo'))).not.toContain('idle_timeout');
  });

  it('sends a request timeout as max_stream_duration, never RouteAction.timeout or idle_timeout', () => {
    const routes = grpcRoutes(grpc([kuma('meshtimeout.yaml')]));
    expect(routes.at(-1)!.route).toEqual({ cluster: 'echo', max_stream_duration: { max_stream_duration: { seconds: 1 } } });
    const cluster = get(grpc([kuma('meshtimeout.yaml')]), CLUSTER, 'echo');
    expect(cluster.connect_timeout).toEqual({ seconds: 5 });
  });

  it('reads a zero timeout as none, as gRPC does: the other timeout, if any, is the limit', () => {
    const timeouts = (http: object) => ({ type: 'MeshTimeout', mesh: 'default', name: 't', spec: { targetRef: { kind: 'Mesh' }, to: [{ targetRef: { kind: 'Mesh' }, default: { http } }] } });
    expect(grpcRoutes(grpc([timeouts({ requestTimeout: '0s', maxStreamDuration: '5s' })])).at(-1)!.route).toEqual({ cluster: 'echo', max_stream_duration: { max_stream_duration: { seconds: 5 } } });
    expect(grpcRoutes(grpc([timeouts({ requestTimeout: '0s' })])).at(-1)!.route).toEqual({ cluster: 'echo' });
  });

  it('retries on gRPC status codes, at most 4 times, without a per-try timeout', () => {
    const retry = {
      type: 'MeshRetry',
      mesh: 'default',
      name: 'grpc-retry',
      spec: { targetRef: { kind: 'Mesh' }, to: [{ targetRef: { kind: 'Mesh' }, default: { grpc: { numRetries: 9, perTryTimeout: '1s', retryOn: ['Unavailable'] } } }] },
    };
    expect(grpcRoutes(grpc([retry])).at(-1)!.route.retry_policy).toEqual({ retry_on: 'unavailable', num_retries: { value: 4 } });
  });

  it('keeps only max_requests of the connection limits, and only the outlier detectors gRPC runs', () => {
    const breaker = {
      type: 'MeshCircuitBreaker',
      mesh: 'default',
      name: 'breaker',
      spec: {
        targetRef: { kind: 'Mesh' },
        to: [
          {
            targetRef: { kind: 'Mesh' },
            default: {
              connectionLimits: { maxConnections: 2, maxRequests: 7 },
              outlierDetection: { interval: '2s', detectors: { totalFailures: { consecutive: 3 }, failurePercentage: { threshold: 50 } } },
            },
          },
        ],
      },
    };
    const cluster = get(grpc([breaker]), CLUSTER, 'echo');
    expect(cluster.circuit_breakers).toEqual({ thresholds: [{ priority: 'DEFAULT', max_requests: { value: 7 } }] });
    expect(cluster.outlier_detection).toEqual({
      interval: { seconds: 2 },
      enforcing_success_rate: { value: 0 },
      enforcing_failure_percentage: { value: 100 },
      failure_percentage_threshold: { value: 50 },
    });
  });

  it('shares one set per type between nodes the same policies select, and the mesh’s between nodes none select', () => {
    const projected = at([kuma('meshtimeout.yaml')]);
    const [a, b] = [snapshotOf(projected, 'default.grpc-client'), snapshotOf(projected, 'default.echo-v2')];
    expect(a.types[ROUTE].named).toBe(b.types[ROUTE].named);
    const none = at([]);
    expect(snapshotOf(none, 'default.grpc-client').types[ROUTE].named).toBe(snapshotOf(none, 'default.echo-v1a').types[ROUTE].named);
  });
});

describe('I9: policies cannot break a node', () => {
  it('sends the share of a subset with no endpoints to the rest of the service, and names no cluster it lacks', () => {
    const split = structuredClone(kuma('meshhttproute-split.yaml')) as any;
    split.spec.to[0].rules[0].default.backendRefs[1].tags = { version: 'v3' };
    const snapshot = snapshotOf(at([split]));
    expect(envoyRoutes(snapshot)[0]!.route.weighted_clusters.clusters).toEqual([
      { name: 'echo:version=v1', weight: { value: 90 } },
      { name: 'echo', weight: { value: 10 } },
    ]);
    expect(snapshot.types[CLUSTER].get('echo:version=v3')).toBeUndefined();
  });

  it('keeps every listener whatever the policies say, and restores the defaults when they are deleted', () => {
    const none = snapshotOf(at([]));
    const all = ['meshhttproute-split.yaml', 'meshhttproute-prefix-v2.yaml', 'meshtimeout.yaml', 'meshretry.yaml', 'meshcircuitbreaker.yaml'].map(kuma);
    const withAll = snapshotOf(at(all));
    expect([...withAll.types[LISTENER].wildcard.list.map((each) => each.name)]).toEqual(none.types[LISTENER].wildcard.list.map((each) => each.name));
    const after = snapshotOf(at([]));
    for (const type of [CLUSTER, ENDPOINT, LISTENER, ROUTE] as const) expect(after.types[type].version).toBe(none.types[type].version);
  });

  it('seals every route with the clusters it names, and every subset cluster with its endpoints (I5)', () => {
    const all = ['meshhttproute-split.yaml', 'meshhttproute-prefix-v2.yaml'].map(kuma);
    for (const node of ['default.frontend-1', 'default.grpc-client']) {
      const snapshot = snapshotOf(at(all), node);
      const routeNames = node === 'default.frontend-1' ? ['outbound:127.0.0.1:20001'] : ['echo'];
      for (const name of routeNames) {
        const named = JSON.stringify(get(snapshot, ROUTE, name)).match(/echo(:[^"]*)?(?=")/g) ?? [];
        for (const cluster of new Set(named.filter((each) => each !== name))) {
          expect(snapshot.types[CLUSTER].get(cluster), `${node} cluster ${cluster}`).toBeDefined();
          expect(snapshot.types[ENDPOINT].get(cluster), `${node} endpoints ${cluster}`).toBeDefined();
        }
      }
    }
  });
});
