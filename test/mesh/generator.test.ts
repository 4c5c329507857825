import { describe, expect, it } from 'vitest';
import { ChanceryError } from '../../src/common/index.js';
import { DataplaneNotFoundError, InvalidNodeIdError, MeshNotFoundError } from '../../src/mesh/errors.js';
import { generate } from '../../src/mesh/generator.js';
import type { Projection } from '../../src/store/types.js';
import { EmptyConfigurationError, type Snapshot } from '../../src/xds/snapshot.js';
import { CLUSTER, ENDPOINT, LISTENER, PUSH_ORDER, ROUTE, type TypeUrl } from '../../src/xds/type-urls.js';

/** The types a gRPC client asks for: every one but SDS, which only mTLS uses. */
const GRPC_TYPES = [CLUSTER, ENDPOINT, LISTENER, ROUTE] as const;
import {
  decode,
  meshState,
  projection,
  storedDataplane,
  storedMesh,
  withDataplane,
  type Decoded,
} from './fixtures.js';

const TCP_PROXY = 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy';
const HCM = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const ROUTER = 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router';
const ADS = { ads: {}, resource_api_version: 'V3' };

/** A mesh with an Envoy sidecar (`web-1`), two backends, and a pure gRPC client. */
function fixture(revision = 7): Projection {
  return projection(
    revision,
    meshState(storedMesh('default'), [
      storedDataplane({
        name: 'web-1',
        address: '10.0.0.1',
        inbound: [{ port: 10001, servicePort: 9001, tags: { service: 'web', version: 'v1' } }],
        outbound: [{ port: 20001, service: 'backend' }],
      }),
      storedDataplane({ name: 'backend-2', address: '10.0.0.3', inbound: [{ port: 8080, tags: { service: 'backend' } }] }),
      storedDataplane({
        name: 'backend-1',
        address: '10.0.0.2',
        inbound: [
          { port: 8081, tags: { service: 'backend' } },
          { port: 8080, tags: { service: 'backend' } },
        ],
      }),
      storedDataplane({ name: 'client', address: '10.0.0.9' }),
    ]),
    meshState(storedMesh('other'), [
      storedDataplane({ mesh: 'other', name: 'lonely-client', address: '10.1.0.1' }),
      storedDataplane({ mesh: 'other', name: 'billing-1', address: '10.1.0.2', inbound: [{ port: 7000, tags: { service: 'billing' } }] }),
    ]),
  );
}

function snapshotOf(node: string, at: Projection = fixture()): Snapshot {
  const result = generate(node, at);
  if (!result.ok) throw result.error;
  return result.snapshot;
}

function wildcard(snapshot: Snapshot, typeUrl: TypeUrl): Map<string, Decoded> {
  return new Map(snapshot.types[typeUrl].wildcard.list.map((resource) => [resource.name, decode(resource).message]));
}

function named(snapshot: Snapshot, typeUrl: TypeUrl): Map<string, Decoded> {
  const sets = snapshot.types[typeUrl].named;
  return new Map(sets.flatMap((set) => set.list.map((resource) => [resource.name, decode(resource).message] as const)));
}

function lookup(snapshot: Snapshot, typeUrl: TypeUrl, name: string): Decoded {
  const resource = snapshot.types[typeUrl].get(name);
  if (resource === undefined) throw new Error(`${typeUrl} ${name} is not in the snapshot`);
  return decode(resource).message;
}

describe('generate', () => {
  describe('Envoy wildcard resources', () => {
    it('gives each inbound a listener on <address>:<port> that proxies TCP to the static cluster localhost:<servicePort>', () => {
      const snapshot = snapshotOf('default.web-1');
      expect(wildcard(snapshot, LISTENER).get('inbound:10.0.0.1:10001')).toEqual({
        name: 'inbound:10.0.0.1:10001',
        address: { socket_address: { address: '10.0.0.1', port_value: 10001 } },
        traffic_direction: 'INBOUND',
        filter_chains: [
          {
            filters: [
              {
                name: 'envoy.filters.network.tcp_proxy',
                typed_config: { '@type': TCP_PROXY, stat_prefix: 'localhost_9001', cluster: 'localhost:9001' },
              },
            ],
          },
        ],
      });
      expect(wildcard(snapshot, CLUSTER).get('localhost:9001')).toEqual({
        name: 'localhost:9001',
        type: 'STATIC',
        connect_timeout: { seconds: 5 },
        load_assignment: {
          cluster_name: 'localhost:9001',
          endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 9001 } } } }] }],
        },
      });
    });

    it('gives each outbound a loopback listener that proxies TCP to the EDS cluster named after the service, retrying a refused connection on another endpoint', () => {
      const snapshot = snapshotOf('default.web-1');
      expect(wildcard(snapshot, LISTENER).get('outbound:127.0.0.1:20001')).toEqual({
        name: 'outbound:127.0.0.1:20001',
        address: { socket_address: { address: '127.0.0.1', port_value: 20001 } },
        traffic_direction: 'OUTBOUND',
        filter_chains: [
          {
            filters: [
              {
                name: 'envoy.filters.network.tcp_proxy',
                typed_config: { '@type': TCP_PROXY, stat_prefix: 'backend', cluster: 'backend', max_connect_attempts: { value: 3 } },
              },
            ],
          },
        ],
      });
      expect([...wildcard(snapshot, CLUSTER).keys()]).toEqual(['backend', 'localhost:9001']);
      expect([...wildcard(snapshot, LISTENER).keys()]).toEqual(['inbound:10.0.0.1:10001', 'outbound:127.0.0.1:20001']);
    });

    it('uses the very same Cluster object for an Envoy outbound and for the service it calls', () => {
      const snapshot = snapshotOf('default.web-1');
      const own = snapshot.types[CLUSTER].wildcard.get('backend');
      const shared = snapshot.types[CLUSTER].named[0]?.get('backend');
      expect(own).toBeDefined();
      expect(own).toBe(shared);
    });

    it('names an IPv6 inbound listener after the address as written and binds it there', () => {
      const at = projection(
        1,
        meshState(storedMesh(), [storedDataplane({ name: 'v6', address: 'fd00::1', inbound: [{ port: 10001, tags: { service: 'v6' } }] })]),
      );
      const listener = wildcard(snapshotOf('default.v6', at), LISTENER).get('inbound:fd00::1:10001');
      expect(listener?.address).toEqual({ socket_address: { address: 'fd00::1', port_value: 10001 } });
      expect(lookup(snapshotOf('default.v6', at), ENDPOINT, 'v6')).toMatchObject({
        endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 'fd00::1', port_value: 10001 } } } }] }],
      });
    });
  });

  describe('proxyless gRPC resources, shared by the mesh', () => {
    it('gives every service a Listener whose api_listener is an HttpConnectionManager using RDS <service> and ending with the router', () => {
      expect(named(snapshotOf('default.client'), LISTENER).get('backend')).toEqual({
        name: 'backend',
        api_listener: {
          api_listener: {
            '@type': HCM,
            stat_prefix: 'backend',
            rds: { route_config_name: 'backend', config_source: ADS },
            http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': ROUTER } }],
          },
        },
      });
    });

    it('routes every domain of RouteConfiguration <service> to cluster <service>', () => {
      expect(named(snapshotOf('default.client'), ROUTE).get('backend')).toEqual({
        name: 'backend',
        virtual_hosts: [{ name: 'backend', domains: ['*'], routes: [{ match: { prefix: '' }, route: { cluster: 'backend' } }] }],
      });
    });

    it('makes Cluster <service> a round-robin EDS cluster fed over ADS', () => {
      expect(named(snapshotOf('default.client'), CLUSTER).get('backend')).toEqual({
        name: 'backend',
        type: 'EDS',
        eds_cluster_config: { service_name: 'backend', eds_config: ADS },
        lb_policy: 'ROUND_ROBIN',
        connect_timeout: { seconds: 5 },
      });
    });

    it('gives every ClusterLoadAssignment a locality and a weight, which gRPC requires', () => {
      const assignments = named(snapshotOf('default.client'), ENDPOINT);
      expect([...assignments.keys()]).toEqual(['backend', 'web']);
      for (const assignment of assignments.values()) {
        const localities = assignment.endpoints as readonly Decoded[];
        expect(localities).toHaveLength(1);
        expect(localities[0]).toMatchObject({ locality: { region: 'default', zone: 'default' }, load_balancing_weight: { value: 1 } });
      }
    });

    it('lists one HEALTHY endpoint per inbound of the service, across dataplanes, sorted by address then port', () => {
      const endpoint = (address: string, port: number) => ({
        endpoint: { address: { socket_address: { address, port_value: port } } },
        health_status: 'HEALTHY',
      });
      expect(named(snapshotOf('default.client'), ENDPOINT).get('backend')).toEqual({
        cluster_name: 'backend',
        endpoints: [
          {
            locality: { region: 'default', zone: 'default' },
            load_balancing_weight: { value: 1 },
            lb_endpoints: [endpoint('10.0.0.2', 8080), endpoint('10.0.0.2', 8081), endpoint('10.0.0.3', 8080)],
          },
        ],
      });
    });

    it('makes a service exist only while an inbound in the mesh has its tag, and never across meshes', () => {
      const at = fixture();
      expect([...named(snapshotOf('default.client', at), LISTENER).keys()]).toEqual(['backend', 'web']);
      expect([...named(snapshotOf('other.lonely-client', at), LISTENER).keys()]).toEqual(['billing']);
      const withoutWeb = projection(8, withoutDataplane(at, 'default', 'web-1'));
      expect([...named(snapshotOf('default.client', withoutWeb), LISTENER).keys()]).toEqual(['backend']);
    });

    it('gives a pure gRPC client empty wildcard sets and the mesh’s service resources', () => {
      const snapshot = snapshotOf('default.client');
      for (const typeUrl of GRPC_TYPES) {
        expect(snapshot.types[typeUrl].wildcard.size).toBe(0);
        expect(named(snapshot, typeUrl).size).toBe(2);
      }
    });

    it('shares one set per type between every node of the mesh', () => {
      const at = fixture();
      const client = snapshotOf('default.client', at);
      const sidecar = snapshotOf('default.web-1', at);
      for (const typeUrl of GRPC_TYPES) {
        expect(client.types[typeUrl].named).toHaveLength(1);
        expect(client.types[typeUrl].named[0]).toBe(sidecar.types[typeUrl].named[0]);
      }
    });
  });

  describe('I1 no empty push', () => {
    it('returns EmptyConfigurationError, never a snapshot, for a pure gRPC client in a mesh without services', () => {
      const result = generate('other.lonely-client', projection(3, meshState(storedMesh('other'), [storedDataplane({ mesh: 'other', name: 'lonely-client' })])));
      expect(result.ok).toBe(false);
      expect(!result.ok && result.error).toBeInstanceOf(EmptyConfigurationError);
      expect(!result.ok && result.error).toMatchObject({ code: 'CHANCERY_XDS_EMPTY_CONFIGURATION', node: 'other.lonely-client', revision: 3 });
    });
  });

  describe('I5 make before break', () => {
    it('puts every RDS name a Listener uses and every EDS name a Cluster uses in the same snapshot', () => {
      const at = fixture();
      for (const node of ['default.web-1', 'default.backend-1', 'default.client', 'other.billing-1']) {
        const snapshot = snapshotOf(node, at);
        for (const [from, to] of [[LISTENER, ROUTE], [CLUSTER, ENDPOINT]] as const) {
          const { wildcard: own, named: shared } = snapshot.types[from];
          for (const resource of [own, ...shared].flatMap((set) => set.list)) {
            for (const name of resource.references) expect(snapshot.types[to].get(name), `${node} ${resource.name} → ${name}`).toBeDefined();
          }
        }
      }
    });

    it('makes each reference match what the encoded resource names', () => {
      const snapshot = snapshotOf('default.web-1');
      for (const listener of snapshot.types[LISTENER].named.flatMap((set) => set.list)) {
        const hcm = (decode(listener).message.api_listener as Decoded).api_listener as Decoded;
        expect(listener.references).toEqual([(hcm.rds as Decoded).route_config_name]);
      }
      for (const cluster of [snapshot.types[CLUSTER].wildcard, ...snapshot.types[CLUSTER].named].flatMap((set) => set.list)) {
        const message = decode(cluster).message;
        const expected = message.type === 'EDS' ? [(message.eds_cluster_config as Decoded).service_name] : [];
        expect(cluster.references).toEqual(expected);
      }
    });

    it('gives an Envoy outbound to a service nobody serves yet an empty ClusterLoadAssignment of its own', () => {
      const at = projection(
        4,
        meshState(storedMesh(), [storedDataplane({ name: 'early', inbound: [{ port: 10001, tags: { service: 'early' } }], outbound: [{ port: 20001, service: 'later' }] })]),
      );
      const snapshot = snapshotOf('default.early', at);
      expect(snapshot.types[CLUSTER].wildcard.get('later')?.references).toEqual(['later']);
      expect(wildcard(snapshot, ENDPOINT)).toEqual(new Map([['later', { cluster_name: 'later' }]]));
      expect(named(snapshot, ENDPOINT).has('later')).toBe(false);
    });

    it('serves the real endpoints once the service appears, with no placeholder left', () => {
      const state = meshState(storedMesh(), [
        storedDataplane({ name: 'early', inbound: [{ port: 10001, tags: { service: 'early' } }], outbound: [{ port: 20001, service: 'later' }] }),
      ]);
      const later = withDataplane(state, storedDataplane({ name: 'later-1', address: '10.0.0.5', inbound: [{ port: 80, tags: { service: 'later' } }] }, 2));
      const snapshot = snapshotOf('default.early', projection(5, later));
      expect(snapshot.types[ENDPOINT].wildcard.size).toBe(0);
      expect(lookup(snapshot, ENDPOINT, 'later')).toMatchObject({
        endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '10.0.0.5', port_value: 80 } } } }] }],
      });
    });
  });

  describe('I6 deterministic versions', () => {
    it('gives the same versions and bytes for the same projection built twice from fresh objects, in another order', () => {
      const first = fixture();
      const reversed = projection(
        first.revision,
        ...[...first.meshes.values()].reverse().map((state) =>
          meshState(storedMesh(state.mesh.resource.name), [...state.dataplanes.values()].reverse().map((dp) => storedDataplane({
            name: dp.resource.name,
            mesh: dp.resource.mesh,
            address: dp.resource.networking.address,
            inbound: [...dp.resource.networking.inbound].reverse().map(({ port, servicePort, tags }) => ({ port, servicePort, tags: { ...tags } })),
            outbound: dp.resource.networking.outbound,
          }))),
        ),
      );
      for (const node of ['default.web-1', 'default.client', 'other.billing-1']) {
        const a = snapshotOf(node, first);
        const b = snapshotOf(node, reversed);
        for (const typeUrl of PUSH_ORDER) {
          expect(b.types[typeUrl].version).toBe(a.types[typeUrl].version);
          const bytes = (s: Snapshot) => [s.types[typeUrl].wildcard, ...s.types[typeUrl].named].flatMap((set) => set.list.map((r) => Buffer.from(r.any).toString('hex')));
          expect(bytes(b)).toEqual(bytes(a));
        }
      }
    });

    it('stamps the snapshot with the projection’s revision and the node id', () => {
      const snapshot = snapshotOf('default.web-1', fixture(42));
      expect(snapshot.revision).toBe(42);
      expect(snapshot.node).toBe('default.web-1');
    });
  });

  describe('errors', () => {
    it.each([
      ['an invalid node id', 'no-dot', InvalidNodeIdError, 'CHANCERY_MESH_INVALID_NODE_ID'],
      ['a node id that is not DNS labels', 'Default.Web 1', InvalidNodeIdError, 'CHANCERY_MESH_INVALID_NODE_ID'],
      ['a mesh that does not exist', 'nowhere.web-1', MeshNotFoundError, 'CHANCERY_MESH_MESH_NOT_FOUND'],
      ['a Dataplane that does not exist yet, which the session waits for', 'default.web-9', DataplaneNotFoundError, 'CHANCERY_MESH_DATAPLANE_NOT_FOUND'],
    ])('returns a typed error for %s, without throwing', (_what, node, type, code) => {
      const result = generate(node, fixture(11));
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.error).toBeInstanceOf(type);
      expect(result.error).toBeInstanceOf(ChanceryError);
      expect(result.error).toMatchObject({ code, node, revision: 11 });
      expect(result.error.message).toContain(node);
    });
  });
});

function withoutDataplane(at: Projection, mesh: string, name: string) {
  const state = at.meshes.get(mesh);
  if (state === undefined) throw new Error(`no mesh ${mesh}`);
  return meshState(state.mesh, [...state.dataplanes.values()].filter((dp) => dp.resource.name !== name));
}
