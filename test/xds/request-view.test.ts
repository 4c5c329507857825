import fc from 'fast-check';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { lookupType } from '../../src/xds/protos.js';
import { decodeDeltaRequest, decodeRequest, encodeDeltaRequest, encodeRequest } from '../../src/xds/xds-request.js';
import { fuzz } from '../support/fuzz.js';
import { discoveryRequestBytes, nestedStruct } from '../support/xds-wire.js';

/** Each field the server reads: its number and wire type in Envoy's own DiscoveryRequest. */
function envoyField(type: protobuf.Type, name: string): { id: number; wireType: number } {
  const field = type.fields[name];
  if (field === undefined) throw new Error(`Envoy's ${type.name} has no field ${name}`);
  field.resolve();
  const scalar = (protobuf.types.basic as Record<string, number | undefined>)[field.type];
  return { id: field.id, wireType: field.repeated || field.resolvedType instanceof protobuf.Type || scalar === undefined ? 2 : scalar };
}

describe('decodeRequest and decodeDeltaRequest read the fields of Envoy’s requests (issue 11)', () => {
  it('uses the numbers of Envoy’s DeltaDiscoveryRequest for every field it reads', () => {
    const delta = lookupType('envoy.service.discovery.v3.DeltaDiscoveryRequest');
    const fields = ['node', 'type_url', 'resource_names_subscribe', 'resource_names_unsubscribe', 'initial_resource_versions', 'response_nonce', 'error_detail'];
    expect(fields.map((name) => envoyField(delta, name).id)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('reads back every Delta request the Envoy proto encodes', async () => {
    await fuzz(
      fc.asyncProperty(
        fc.record({
          typeUrl: fc.string(),
          subscribe: fc.array(fc.string(), { maxLength: 5 }),
          unsubscribe: fc.array(fc.string(), { maxLength: 5 }),
          initialVersions: fc.dictionary(fc.string(), fc.string(), { maxKeys: 5 }),
          responseNonce: fc.string(),
          nodeId: fc.string({ minLength: 1 }),
        }),
        async (request) => {
          expect(decodeDeltaRequest(encodeDeltaRequest(request))).toEqual({ ok: true, request: { protocol: 'delta', ...request }, nodeMetadata: undefined });
        },
      ),
      { runs: 200 },
    );
  });

  it('uses the numbers of Envoy’s proto for every field it reads', () => {
    const request = lookupType('envoy.service.discovery.v3.DiscoveryRequest');
    const node = lookupType('envoy.config.core.v3.Node');
    const status = lookupType('google.rpc.Status');
    expect(['version_info', 'node', 'resource_names', 'type_url', 'response_nonce', 'error_detail'].map((name) => envoyField(request, name).id)).toEqual([1, 2, 3, 4, 5, 6]);
    // node.metadata is a Struct there, read as bytes here: both length-delimited.
    expect([envoyField(node, 'id'), envoyField(node, 'metadata')]).toEqual([
      { id: 1, wireType: 2 },
      { id: 3, wireType: 2 },
    ]);
    expect([envoyField(status, 'code').id, envoyField(status, 'message').id]).toEqual([1, 2]);
  });

  it('reads back every request the Envoy proto encodes', async () => {
    await fuzz(
      fc.asyncProperty(
        fc.record({
          typeUrl: fc.string(),
          versionInfo: fc.string(),
          resourceNames: fc.array(fc.string(), { maxLength: 5 }),
          responseNonce: fc.string(),
          nodeId: fc.string({ minLength: 1 }),
        }),
        async (request) => {
          expect(decodeRequest(encodeRequest(request))).toEqual({ ok: true, request: { protocol: 'sotw', ...request }, nodeMetadata: undefined });
        },
      ),
      { runs: 200 },
    );
  });

  it('never throws, whatever the bytes: what is not a DiscoveryRequest is answered as such', async () => {
    await fuzz(
      fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), async (bytes) => {
        const decoded = decodeRequest(bytes);
        if (!decoded.ok) expect(decoded.reason.length).toBeLessThanOrEqual(121);
      }),
      { runs: 2_000 },
    );
    // Groups nested past protobufjs's recursion limit, in a field the view skips.
    expect(decodeRequest(Buffer.alloc(10_000, 0x5b))).toMatchObject({ ok: false });
  });

  it('leaves node.metadata encoded however deep it is, for the limits to measure', () => {
    const metadata = nestedStruct(2_000);
    const decoded = decodeRequest(discoveryRequestBytes({ typeUrl: 't', nodeId: 'default.web-1', metadata }));
    expect(decoded).toMatchObject({ ok: true, request: { nodeId: 'default.web-1', typeUrl: 't' } });
    expect(decoded.ok && Buffer.from(decoded.nodeMetadata ?? []).equals(Buffer.from(metadata))).toBe(true);
  });

  it('keeps a NACK message storable: control characters and lone surrogates become U+FFFD, and it is cut', () => {
    const message = `bad\u0000 \ud800 ${'x'.repeat(10_000)}`;
    const decoded = decodeRequest(encodeRequest({ typeUrl: 't', errorDetail: { code: 3, message } }));
    const kept = decoded.ok ? decoded.request.errorDetail?.message : undefined;
    expect(kept?.startsWith('bad\ufffd \ufffd x')).toBe(true);
    expect(kept).toHaveLength(4_096);
  });
});

describe('requests read from the same bytes are one object (a change\u2019s ACKs from 10,000 nodes)', () => {
  const ack = { typeUrl: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment', versionInfo: 'v7', resourceNames: ['b', 'a'], responseNonce: '3' };

  it('reads equal bytes once, into a frozen request no stream can change for another', () => {
    const first = decodeRequest(Buffer.from(encodeRequest(ack)));
    const again = decodeRequest(Buffer.from(encodeRequest(ack)));
    expect(again).toBe(first);
    expect(first).toEqual({ ok: true, request: { protocol: 'sotw', ...ack }, nodeMetadata: undefined });
    const request = first.ok ? first.request : undefined;
    if (request?.protocol !== 'sotw') throw new Error('expected a SotW request');
    expect(Object.isFrozen(request) && Object.isFrozen(request.resourceNames)).toBe(true);
    expect(() => (request.resourceNames as string[]).sort()).toThrow(TypeError);
  });

  it('reads a first request, which names its node, every time', () => {
    const bytes = encodeRequest({ ...ack, nodeId: 'default.web-1' });
    expect(decodeRequest(bytes)).not.toBe(decodeRequest(bytes));
  });

  it('reads the same bytes by the protocol of the stream they came on', () => {
    const bytes = encodeRequest({ typeUrl: 'looks like a name to Delta' });
    expect(decodeRequest(bytes)).toMatchObject({ ok: true, request: { protocol: 'sotw', typeUrl: 'looks like a name to Delta' } });
    // Field 4 is resource_names_unsubscribe in a DeltaDiscoveryRequest.
    expect(decodeDeltaRequest(bytes)).toMatchObject({ ok: true, request: { protocol: 'delta', typeUrl: '', unsubscribe: ['looks like a name to Delta'] } });
    const delta = encodeDeltaRequest({ typeUrl: 't', subscribe: ['x'], initialVersions: { x: '1' }, responseNonce: '1' });
    expect(decodeDeltaRequest(delta)).toBe(decodeDeltaRequest(Buffer.from(delta)));
  });

  it('reads back every request without a node as the proto encodes it, the first time and the next', async () => {
    await fuzz(
      fc.asyncProperty(
        fc.record({ typeUrl: fc.string(), versionInfo: fc.string(), resourceNames: fc.array(fc.string(), { maxLength: 5 }), responseNonce: fc.string() }),
        async (request) => {
          const expected = { ok: true, request: { protocol: 'sotw', ...request }, nodeMetadata: undefined };
          expect(decodeRequest(encodeRequest(request))).toEqual(expected);
          expect(decodeRequest(encodeRequest(request))).toEqual(expected);
        },
      ),
      { runs: 200 },
    );
  });
});
