import { describe, expect, it } from 'vitest';
import { CLUSTER, encodeResource, ENDPOINT } from '../../src/xds/index.js';
import { envoyRoot } from '../../src/xds/protos.js';
import { ResponseEncoder } from '../../src/xds/response-encoder.js';

// What a client reads: Envoy's own messages, decoded by protobufjs from the bytes Chancery writes.
const DiscoveryResponse = () => envoyRoot().lookupType('envoy.service.discovery.v3.DiscoveryResponse');
const DeltaDiscoveryResponse = () => envoyRoot().lookupType('envoy.service.discovery.v3.DeltaDiscoveryResponse');

function endpoints(name: string, hosts: number) {
  return encodeResource(ENDPOINT, name, {
    cluster_name: name,
    endpoints: [
      {
        lb_endpoints: Array.from({ length: hosts }, (_, i) => ({
          endpoint: { address: { socket_address: { address: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, port_value: 8080 } } },
        })),
      },
    ],
  });
}

describe('ResponseEncoder', () => {
  // Field lengths of one, two and three varint bytes; text with multi-byte UTF-8.
  const small = endpoints('svc-a', 1);
  const medium = endpoints('svc-b', 20);
  const large = endpoints('svc-c', 1_000);

  it('writes a DiscoveryResponse that decodes to the response it was given, resources in order', () => {
    const encoder = new ResponseEncoder('instance-é');
    const resources = [large, small, medium];
    const bytes = encoder.encode({ protocol: 'sotw', typeUrl: ENDPOINT, version: 'v-ü-1', nonce: 'nonce-ß-42', resources });
    const decoded = DiscoveryResponse().toObject(DiscoveryResponse().decode(bytes), { bytes: Buffer }) as Record<string, any>;
    expect(decoded.version_info).toBe('v-ü-1');
    expect(decoded.nonce).toBe('nonce-ß-42');
    expect(decoded.type_url).toBe(ENDPOINT);
    expect(decoded.control_plane.identifier).toBe('instance-é');
    expect(decoded.resources.map((any: { type_url: string }) => any.type_url)).toEqual([ENDPOINT, ENDPOINT, ENDPOINT]);
    const wrapped = resources.map((resource) => Buffer.from(resource.any));
    const sent = decoded.resources.map((any: { type_url: string; value: Buffer }) => {
      const Any = envoyRoot().lookupType('google.protobuf.Any');
      return Buffer.from(Any.encode(Any.fromObject(any)).finish());
    });
    expect(sent).toEqual(wrapped);
  });

  it('keeps a resource’s bytes in memory of their own, not in a slice of a pool that a small resource would keep whole', () => {
    const tiny = endpoints('svc-tiny', 1);
    expect(tiny.any.byteLength).toBeLessThan(200);
    expect(tiny.any.buffer.byteLength).toBe(tiny.any.byteLength);
  });

  it('gives each response its own nonce and version, in a buffer of its own', () => {
    const encoder = new ResponseEncoder('cp');
    const resources = [small, medium];
    const first = encoder.encode({ protocol: 'sotw', typeUrl: ENDPOINT, version: '1', nonce: 'a', resources });
    const second = encoder.encode({ protocol: 'sotw', typeUrl: ENDPOINT, version: '22', nonce: 'bb', resources });
    const read = (bytes: Buffer) => DiscoveryResponse().toObject(DiscoveryResponse().decode(bytes)) as Record<string, any>;
    expect([read(first).version_info, read(first).nonce]).toEqual(['1', 'a']);
    expect([read(second).version_info, read(second).nonce]).toEqual(['22', 'bb']);
    expect(read(second).resources).toHaveLength(2);
    expect(first.buffer === second.buffer && first.byteOffset === second.byteOffset).toBe(false);
  });

  it('writes the same bytes for a response repeating the previous one of its type as for one encoded alone, each with its nonce', () => {
    const encoder = new ResponseEncoder('cp');
    const alone = (response: Parameters<ResponseEncoder['encode']>[0]) => new ResponseEncoder('cp').encode(response);
    const fanned = [small, medium];
    const other = [large];
    // A change fanned out: the same resources and version, node after node, another type between.
    const responses = [
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '1', nonce: '7', resources: fanned },
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '1', nonce: '12', resources: fanned },
      { protocol: 'sotw' as const, typeUrl: CLUSTER, version: 'c', nonce: '3', resources: other },
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '1', nonce: '8', resources: fanned },
      // The same resources at another version, then another set at the old version: neither is the body before.
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '2', nonce: '9', resources: fanned },
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '2', nonce: '10', resources: fanned },
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '2', nonce: '11', resources: other },
      // Equal lists of their own (what changed since each node's ACK): the same body; one element other: not.
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '3', nonce: '14', resources: [small, medium] },
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '3', nonce: '15', resources: [small, medium] },
      // Streams at the same point of their life: the same nonce, the same response, once or again after another.
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '3', nonce: '15', resources: [small, medium] },
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '3', nonce: '14', resources: [small, medium] },
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '3', nonce: '15', resources: [small, medium] },
      { protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '3', nonce: '16', resources: [small, large] },
    ];
    const written = responses.map((response) => encoder.encode(response));
    expect(written).toEqual(responses.map(alone));
    const read = (bytes: Buffer) => DiscoveryResponse().toObject(DiscoveryResponse().decode(bytes)) as Record<string, any>;
    expect(written.map((bytes) => [read(bytes).version_info, read(bytes).nonce, read(bytes).resources.length])).toEqual([
      ['1', '7', 2],
      ['1', '12', 2],
      ['c', '3', 1],
      ['1', '8', 2],
      ['2', '9', 2],
      ['2', '10', 2],
      ['2', '11', 1],
      ['3', '14', 2],
      ['3', '15', 2],
      ['3', '15', 2],
      ['3', '14', 2],
      ['3', '15', 2],
      ['3', '16', 2],
    ]);
  });

  it('hands out the bytes of the previous response again for one that repeats it, nonce included: grpc-js copies them into its frame', () => {
    const encoder = new ResponseEncoder('cp');
    const response = (nonce: string) => ({ protocol: 'sotw' as const, typeUrl: ENDPOINT, version: '1', nonce, resources: [small, medium] });
    const [first, second, third, fourth] = ['4', '4', '4', '5'].map((nonce) => encoder.encode(response(nonce)));
    // The first of a body is encoded whole; the second makes the body, the third is the second again.
    expect(second).not.toBe(first);
    expect(third).toBe(second);
    expect(fourth).not.toBe(third);
    expect(first).toEqual(second);
  });

  it('writes a DeltaDiscoveryResponse with each resource named and versioned, and the removed names', () => {
    const encoder = new ResponseEncoder('cp');
    const cluster = encodeResource(CLUSTER, 'ü-cluster', { name: 'ü-cluster', type: 'EDS', eds_cluster_config: { eds_config: { ads: {} } } });
    const bytes = encoder.encode({
      protocol: 'delta',
      typeUrl: CLUSTER,
      version: 'system-1',
      nonce: '7',
      resources: [cluster],
      removed: ['gone-a', 'gone-ö'],
    });
    const decoded = DeltaDiscoveryResponse().toObject(DeltaDiscoveryResponse().decode(bytes)) as Record<string, any>;
    expect(decoded.system_version_info).toBe('system-1');
    expect(decoded.nonce).toBe('7');
    expect(decoded.type_url).toBe(CLUSTER);
    expect(decoded.removed_resources).toEqual(['gone-a', 'gone-ö']);
    expect(decoded.resources.map((resource: { name: string; version: string }) => [resource.name, resource.version])).toEqual([['ü-cluster', cluster.version]]);
    expect(decoded.control_plane.identifier).toBe('cp');
  });
});
