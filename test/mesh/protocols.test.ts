import { describe, expect, it } from 'vitest';
import { generate } from '../../src/mesh/generator.js';
import { commonProtocol, type Protocol } from '../../src/mesh/protocols.js';
import { validate } from '../../src/mesh/validate.js';
import type { Projection } from '../../src/store/types.js';
import type { Snapshot } from '../../src/xds/snapshot.js';
import { CLUSTER, LISTENER, ROUTE } from '../../src/xds/type-urls.js';
import { decode, meshState, projection, storedDataplane, storedMesh, type Decoded } from './fixtures.js';

const HCM = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const HTTP_OPTIONS = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';

const client = () => storedDataplane({ name: 'web-1', address: '10.0.0.1', outbound: [{ port: 20001, service: 'echo' }] });

/** A client calling one service whose backends declare `protocols`. */
function meshWith(protocols: ReadonlyArray<Protocol | undefined>, web = client()): Projection {
  return projection(
    3,
    meshState(storedMesh(), [
      web,
      ...protocols.map((protocol, i) =>
        storedDataplane({
          name: `echo-${i}`,
          address: `10.0.0.${i + 10}`,
          inbound: [{ port: 8080, tags: protocol === undefined ? { service: 'echo' } : { service: 'echo', protocol } }],
        }),
      ),
    ]),
  );
}

function snapshotOf(at: Projection, node = 'default.web-1'): Snapshot {
  const result = generate(node, at);
  if (!result.ok) throw result.error;
  return result.snapshot;
}

function own(snapshot: Snapshot, typeUrl: typeof LISTENER | typeof CLUSTER | typeof ROUTE, name: string): Decoded {
  const resource = snapshot.types[typeUrl].wildcard.get(name);
  if (resource === undefined) throw new Error(`${name} is not among the node's own ${typeUrl}`);
  return decode(resource).message;
}

function outboundFilter(snapshot: Snapshot): { name: unknown; typed_config: Decoded } {
  const listener = own(snapshot, LISTENER, 'outbound:127.0.0.1:20001') as { filter_chains: Array<{ filters: Array<{ name: unknown; typed_config: Decoded }> }> };
  return listener.filter_chains[0]!.filters[0]!;
}

describe('the protocol a service speaks (tag protocol)', () => {
  it.each<[Protocol, Protocol, Protocol]>([
    ['tcp', 'tcp', 'tcp'],
    ['http', 'http', 'http'],
    ['http', 'http2', 'tcp'],
    ['http', 'grpc', 'tcp'],
    ['http2', 'grpc', 'http2'],
    ['grpc', 'grpc', 'grpc'],
    ['grpc', 'tcp', 'tcp'],
  ])('makes %s with %s the lowest common protocol %s', (a, b, common) => {
    expect(commonProtocol(a, b)).toBe(common);
    expect(commonProtocol(b, a)).toBe(common);
  });

  it('keeps an Envoy outbound to a service with no protocol tag a TCP proxy, with no routes of its own', () => {
    const snapshot = snapshotOf(meshWith([undefined, undefined]));
    expect(outboundFilter(snapshot).name).toBe('envoy.filters.network.tcp_proxy');
    expect(snapshot.types[ROUTE].wildcard.size).toBe(0);
  });

  it('makes an Envoy outbound to an http service an HTTP connection manager whose routes come over RDS, named after the listener', () => {
    const snapshot = snapshotOf(meshWith(['http', 'http']));
    const filter = outboundFilter(snapshot);
    expect(filter.name).toBe('envoy.filters.network.http_connection_manager');
    expect(filter.typed_config).toMatchObject({
      '@type': HCM,
      stat_prefix: 'echo',
      rds: { route_config_name: 'outbound:127.0.0.1:20001', config_source: { ads: {}, resource_api_version: 'V3' } },
      http_filters: [{ name: 'envoy.filters.http.router' }],
    });
    expect(own(snapshot, ROUTE, 'outbound:127.0.0.1:20001')).toEqual({
      name: 'outbound:127.0.0.1:20001',
      virtual_hosts: [{ name: 'echo', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'echo' } }] }],
    });
    // An HTTP/1.1 service's cluster is the very one proxyless clients get.
    expect(snapshot.types[CLUSTER].wildcard.get('echo')).toBe(snapshot.types[CLUSTER].named[0]?.get('echo'));
  });

  it('makes the cluster of a grpc or http2 service speak HTTP/2 upstream', () => {
    for (const protocol of ['grpc', 'http2'] as const) {
      const cluster = own(snapshotOf(meshWith([protocol])), CLUSTER, 'echo');
      expect(cluster.typed_extension_protocol_options).toEqual({
        [HTTP_OPTIONS]: { '@type': `type.googleapis.com/${HTTP_OPTIONS}`, explicit_http_config: { http2_protocol_options: {} } },
      });
    }
  });

  it('uses the lowest common protocol when the inbounds of a service disagree: http with http2 is a TCP proxy', () => {
    expect(outboundFilter(snapshotOf(meshWith(['http', 'http2']))).name).toBe('envoy.filters.network.tcp_proxy');
    expect(outboundFilter(snapshotOf(meshWith(['grpc', 'http2']))).name).toBe('envoy.filters.network.http_connection_manager');
  });

  it('follows a backend whose protocol changes, without the client Dataplane being written again', () => {
    const web = client();
    const before = snapshotOf(meshWith(['tcp'], web));
    const after = snapshotOf(meshWith(['http'], web));
    expect(outboundFilter(before).name).toBe('envoy.filters.network.tcp_proxy');
    expect(outboundFilter(after).name).toBe('envoy.filters.network.http_connection_manager');
  });

  it('refuses a protocol tag that is none of tcp, http, http2 or grpc, naming the tag', () => {
    const result = validate({
      type: 'Dataplane',
      mesh: 'default',
      name: 'echo-1',
      networking: { address: '10.0.0.1', inbound: [{ port: 8080, tags: { service: 'echo', protocol: 'HTTP' } }] },
    });
    expect(result).toEqual({
      ok: false,
      issues: [{ path: 'networking.inbound[0].tags.protocol', reason: 'must be one of "tcp", "http", "http2", "grpc"' }],
    });
  });
});
