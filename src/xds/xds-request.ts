import protobuf from 'protobufjs';
import { clip, storableText } from '../common/index.js';
import { lookupType } from './protos.js';
import { InternTable } from './intern-table.js';
import { RepeatedText } from './repeated-text.js';
import type { DeltaRequest, RequestBase, StreamRequest, XdsRequest } from './stream/index.js';

/**
 * A request as read from the wire, or why it could not be read. `nodeMetadata` is the node's
 * metadata still encoded, for the limits (request-limits.ts) to measure; it is not part of the
 * request the sessions get.
 */
export type WireRequest =
  | { readonly ok: true; readonly request: StreamRequest; readonly nodeMetadata: Uint8Array | undefined }
  | { readonly ok: false; readonly reason: string };

/**
 * The fields of Envoy's DiscoveryRequest and DeltaDiscoveryRequest that Chancery reads, with
 * their numbers and wire types, and `node.metadata` (a google.protobuf.Struct) read as bytes.
 * protobufjs decodes a Struct by recursion and throws past 100 nested messages, which grpc-js
 * reports as INTERNAL (issue 11: a 2,000-deep metadata); read as bytes, it is never decoded,
 * only measured. Every other field is skipped unread. test/xds/request-view.test.ts checks the
 * numbers against Envoy's proto.
 */
const VIEW = `
  syntax = "proto3";
  package chancery.wire;
  message Status { int32 code = 1; string message = 2; }
  message Node { string id = 1; bytes metadata = 3; }
  message DiscoveryRequest {
    string version_info = 1;
    Node node = 2;
    repeated string resource_names = 3;
    string type_url = 4;
    string response_nonce = 5;
    Status error_detail = 6;
  }
  message DeltaDiscoveryRequest {
    Node node = 1;
    string type_url = 2;
    repeated string resource_names_subscribe = 3;
    repeated string resource_names_unsubscribe = 4;
    map<string, string> initial_resource_versions = 5;
    string response_nonce = 6;
    Status error_detail = 7;
  }`;

/** The most characters of a NACK message kept: it is shown and saved with the session records. */
export const MAX_NACK_MESSAGE = 4_096;

interface DecodedView {
  node?: { id?: string; metadata?: Uint8Array } | null;
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string } | null;
  version_info?: string;
  resource_names?: string[];
  resource_names_subscribe?: string[];
  resource_names_unsubscribe?: string[];
  initial_resource_versions?: Record<string, string>;
}

let view: protobuf.Root | undefined;

/** Type URLs, resource names and versions of every request, one string each however many nodes send them. */
const repeated = new RepeatedText();

/** The view's message type for one protocol's request. */
function viewOf(name: 'DiscoveryRequest' | 'DeltaDiscoveryRequest'): protobuf.Type {
  view ??= protobuf.parse(VIEW, { keepCase: true }).root;
  return view.lookupType(`chancery.wire.${name}`);
}

/**
 * Reads one protocol's request from the wire. It never throws: grpc-js turns a throw in a
 * deserializer into INTERNAL, and bytes that are not a request are the client's mistake, which
 * the server answers with INVALID_ARGUMENT.
 */
function decodeWith(type: protobuf.Type, bytes: Uint8Array, read: (message: DecodedView, base: RequestBase) => StreamRequest): WireRequest {
  let message: DecodedView;
  try {
    message = type.decode(bytes) as unknown as DecodedView;
  } catch (error) {
    return { ok: false, reason: clip(error instanceof Error ? error.message : String(error), 120) };
  }
  const detail = message.error_detail;
  // A NACK's message is only recorded and shown, never matched: kept storable rather than refused.
  const errorDetail = detail ? { code: detail.code ?? 0, message: storableText(detail.message ?? '', MAX_NACK_MESSAGE) } : undefined;
  const nodeId = message.node?.id;
  const metadata = message.node?.metadata;
  const base: RequestBase = {
    typeUrl: repeated.of(message.type_url ?? ''),
    responseNonce: message.response_nonce ?? '',
    ...(errorDetail && { errorDetail }),
    ...(nodeId !== undefined && nodeId !== '' && { nodeId }),
  };
  return { ok: true, request: read(message, base), nodeMetadata: metadata !== undefined && metadata.length > 0 ? metadata : undefined };
}

/** Messages longer than this are decoded each time: their text would cost more to keep than to read again. */
const MAX_SHARED_BYTES = 1_024;

/** Requests decoded from bytes read before, by protocol and bytes, while one of them lives. */
const shared = { sotw: new InternTable<WireRequest>(), delta: new InternTable<WireRequest>() };

/**
 * Reads a request, or returns the one read from the same bytes before, while it lives. A change's
 * ACKs are the same bytes from every node it reached (type, version, names and the nonce's count
 * alike): 10,000 of them are decoded once, and hold one object, not 10,000 copies waiting in the
 * scheduler. A first request names its node and is read every time; a shared one is frozen, so
 * no stream can change what another reads.
 */
function decodeShared(protocol: 'sotw' | 'delta', bytes: Uint8Array, decode: (bytes: Uint8Array) => WireRequest): WireRequest {
  if (bytes.length > MAX_SHARED_BYTES) return decode(bytes);
  const table = shared[protocol];
  // grpc-js hands a Buffer; its latin1 text is its bytes, one character each.
  const key = (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('latin1');
  const kept = table.get(key);
  if (kept !== undefined) return kept;
  const wire = decode(bytes);
  return wire.ok && wire.request.nodeId === undefined ? table.intern(key, frozen(wire)) : wire;
}

function frozen(wire: WireRequest & { ok: true }): WireRequest {
  for (const value of Object.values(wire.request)) if (typeof value === 'object') Object.freeze(value);
  Object.freeze(wire.request);
  return Object.freeze(wire);
}

let sotwView: protobuf.Type | undefined;
let deltaView: protobuf.Type | undefined;

/** Deserializes a DiscoveryRequest from the wire. */
export function decodeRequest(bytes: Uint8Array): WireRequest {
  return decodeShared('sotw', bytes, readRequest);
}

/** Deserializes a DeltaDiscoveryRequest from the wire. */
export function decodeDeltaRequest(bytes: Uint8Array): WireRequest {
  return decodeShared('delta', bytes, readDeltaRequest);
}

function readRequest(bytes: Uint8Array): WireRequest {
  sotwView ??= viewOf('DiscoveryRequest');
  return decodeWith(sotwView, bytes, (message, base) => ({
    protocol: 'sotw',
    ...base,
    versionInfo: repeated.of(message.version_info ?? ''),
    resourceNames: repeated.all(message.resource_names ?? []),
  }));
}

function readDeltaRequest(bytes: Uint8Array): WireRequest {
  deltaView ??= viewOf('DeltaDiscoveryRequest');
  return decodeWith(deltaView, bytes, (message, base) => ({
    protocol: 'delta',
    ...base,
    subscribe: repeated.all(message.resource_names_subscribe ?? []),
    unsubscribe: repeated.all(message.resource_names_unsubscribe ?? []),
    initialVersions: { ...message.initial_resource_versions },
  }));
}

let sotwType: ReturnType<typeof lookupType> | undefined;
let deltaType: ReturnType<typeof lookupType> | undefined;

/** Serializes a DiscoveryRequest; for clients (tests and benchmarks). */
export function encodeRequest(request: Partial<Omit<XdsRequest, 'protocol'>> & { typeUrl: string }): Uint8Array {
  sotwType ??= lookupType('envoy.service.discovery.v3.DiscoveryRequest');
  return sotwType
    .encode(
      sotwType.fromObject({
        type_url: request.typeUrl,
        version_info: request.versionInfo ?? '',
        resource_names: [...(request.resourceNames ?? [])],
        response_nonce: request.responseNonce ?? '',
        ...(request.errorDetail && { error_detail: request.errorDetail }),
        ...(request.nodeId !== undefined && { node: { id: request.nodeId, locality: {} } }),
      }),
    )
    .finish();
}

/** Serializes a DeltaDiscoveryRequest; for clients (tests and benchmarks). */
export function encodeDeltaRequest(request: Partial<Omit<DeltaRequest, 'protocol'>> & { typeUrl: string }): Uint8Array {
  deltaType ??= lookupType('envoy.service.discovery.v3.DeltaDiscoveryRequest');
  return deltaType
    .encode(
      deltaType.fromObject({
        type_url: request.typeUrl,
        resource_names_subscribe: [...(request.subscribe ?? [])],
        resource_names_unsubscribe: [...(request.unsubscribe ?? [])],
        initial_resource_versions: { ...request.initialVersions },
        response_nonce: request.responseNonce ?? '',
        ...(request.errorDetail && { error_detail: request.errorDetail }),
        ...(request.nodeId !== undefined && { node: { id: request.nodeId, locality: {} } }),
      }),
    )
    .finish();
}
