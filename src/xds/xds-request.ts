import protobuf from 'protobufjs';
import { clip } from '../excerpt.js';
import { storableText } from '../storable-text.js';
import { lookupType } from './protos.js';

/** The parts of a SotW DiscoveryRequest Chancery reads. */
export interface XdsRequest {
  readonly typeUrl: string;
  readonly versionInfo: string;
  readonly resourceNames: readonly string[];
  readonly responseNonce: string;
  /** Present on a NACK (xDS: "NACK is indicated by the presence of error_detail"). */
  readonly errorDetail?: { readonly code: number; readonly message: string };
  /** Only the first request on a stream is guaranteed to carry it. */
  readonly nodeId?: string;
}

/**
 * A DiscoveryRequest as read from the wire, or why it could not be read. `nodeMetadata` is
 * the node's metadata still encoded, for the limits (request-limits.ts) to measure; it is not
 * part of the request the sessions get.
 */
export type WireRequest =
  | { readonly ok: true; readonly request: XdsRequest; readonly nodeMetadata: Uint8Array | undefined }
  | { readonly ok: false; readonly reason: string };

/**
 * The fields of Envoy's DiscoveryRequest that Chancery reads, with their numbers and wire types,
 * and `node.metadata` (a google.protobuf.Struct) read as bytes. protobufjs decodes a Struct by
 * recursion and throws past 100 nested messages, which grpc-js reports as INTERNAL (issue 11:
 * a 2,000-deep metadata); read as bytes, it is never decoded, only measured. Every other field
 * is skipped unread. test/xds/request-view.test.ts checks the numbers against Envoy's proto.
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
  }`;

/** The most characters of a NACK message kept: it is shown and saved with the session records. */
export const MAX_NACK_MESSAGE = 4_096;

interface DecodedView {
  version_info?: string;
  node?: { id?: string; metadata?: Uint8Array } | null;
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string } | null;
}

let viewType: protobuf.Type | undefined;

/**
 * Deserializes a DiscoveryRequest from the wire. It never throws: grpc-js turns a throw in a
 * deserializer into INTERNAL, and bytes that are not a DiscoveryRequest are the client's
 * mistake, which the server answers with INVALID_ARGUMENT.
 */
export function decodeRequest(bytes: Uint8Array): WireRequest {
  viewType ??= protobuf.parse(VIEW, { keepCase: true }).root.lookupType('chancery.wire.DiscoveryRequest');
  let message: DecodedView;
  try {
    message = viewType.decode(bytes) as unknown as DecodedView;
  } catch (error) {
    return { ok: false, reason: clip(error instanceof Error ? error.message : String(error), 120) };
  }
  const detail = message.error_detail;
  // A NACK's message is only recorded and shown, never matched: kept storable rather than refused.
  const errorDetail = detail ? { code: detail.code ?? 0, message: storableText(detail.message ?? '', MAX_NACK_MESSAGE) } : undefined;
  const nodeId = message.node?.id;
  const metadata = message.node?.metadata;
  const request: XdsRequest = {
    typeUrl: message.type_url ?? '',
    versionInfo: message.version_info ?? '',
    resourceNames: message.resource_names ?? [],
    responseNonce: message.response_nonce ?? '',
    ...(errorDetail && { errorDetail }),
    ...(nodeId !== undefined && nodeId !== '' && { nodeId }),
  };
  return { ok: true, request, nodeMetadata: metadata !== undefined && metadata.length > 0 ? metadata : undefined };
}

let requestType: ReturnType<typeof lookupType> | undefined;

/** Serializes a DiscoveryRequest; for clients (tests and benchmarks). */
export function encodeRequest(request: Partial<XdsRequest> & { typeUrl: string }): Uint8Array {
  requestType ??= lookupType('envoy.service.discovery.v3.DiscoveryRequest');
  return requestType
    .encode(
      requestType.fromObject({
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
