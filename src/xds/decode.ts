import { lookupType } from './protos.js';
import { toProtoJson } from './proto-json.js';

export interface DecodedResponse {
  readonly versionInfo: string;
  readonly typeUrl: string;
  readonly nonce: string;
  readonly controlPlane: string;
  /** Each resource as canonical proto3 JSON with its `@type` (see `toProtoJson`). */
  readonly resources: readonly Record<string, unknown>[];
}

/** Decodes an encoded `google.protobuf.Any` holding an Envoy resource into proto3 JSON with its `@type`. */
export function decodeAny(any: Uint8Array): Record<string, unknown> {
  const anyType = lookupType('google.protobuf.Any');
  const { type_url: typeUrl, value } = anyType.decode(any) as unknown as { type_url: string; value: Uint8Array };
  const type = lookupType(typeUrl.slice(typeUrl.lastIndexOf('/') + 1));
  return { '@type': typeUrl, ...toProtoJson(type, type.decode(value)) };
}

/** Decodes a DiscoveryResponse from the wire: for clients, tests and inspection. */
export function decodeResponse(bytes: Uint8Array): DecodedResponse {
  const type = lookupType('envoy.service.discovery.v3.DiscoveryResponse');
  const message = type.decode(bytes) as unknown as {
    version_info?: string;
    type_url?: string;
    nonce?: string;
    control_plane?: { identifier?: string };
    resources?: Array<{ type_url: string; value: Uint8Array }>;
  };
  return {
    versionInfo: message.version_info ?? '',
    typeUrl: message.type_url ?? '',
    nonce: message.nonce ?? '',
    controlPlane: message.control_plane?.identifier ?? '',
    resources: (message.resources ?? []).map(({ type_url: typeUrl, value }) => {
      const resourceType = lookupType(typeUrl.slice(typeUrl.lastIndexOf('/') + 1));
      return { '@type': typeUrl, ...toProtoJson(resourceType, resourceType.decode(value)) };
    }),
  };
}
