import type protobuf from 'protobufjs';
import { lookupType } from './protos.js';

export interface DecodedResponse {
  readonly versionInfo: string;
  readonly typeUrl: string;
  readonly nonce: string;
  readonly controlPlane: string;
  /** Each resource as protobuf JSON, nested `Any` as `{ '@type': … }`. */
  readonly resources: readonly Record<string, unknown>[];
}

const jsonOptions: protobuf.IConversionOptions = { longs: String, enums: String, json: true };

/** Decodes an encoded `google.protobuf.Any` holding an Envoy resource into readable JSON. */
export function decodeAny(any: Uint8Array): Record<string, unknown> {
  const anyType = lookupType('google.protobuf.Any');
  const { type_url: typeUrl, value } = anyType.decode(any) as unknown as { type_url: string; value: Uint8Array };
  const type = lookupType(typeUrl.slice(typeUrl.lastIndexOf('/') + 1));
  return { '@type': typeUrl, ...type.toObject(type.decode(value), jsonOptions) };
}

/** Decodes a DiscoveryResponse from the wire: for clients, tests and inspection. */
export function decodeResponse(bytes: Uint8Array): DecodedResponse {
  const type = lookupType('envoy.service.discovery.v3.DiscoveryResponse');
  const anyType = lookupType('google.protobuf.Any');
  const message = type.decode(bytes) as unknown as {
    version_info?: string;
    type_url?: string;
    nonce?: string;
    control_plane?: { identifier?: string };
    resources?: protobuf.Message[];
  };
  return {
    versionInfo: message.version_info ?? '',
    typeUrl: message.type_url ?? '',
    nonce: message.nonce ?? '',
    controlPlane: message.control_plane?.identifier ?? '',
    resources: (message.resources ?? []).map((any) => decodeAny(anyType.encode(any).finish())),
  };
}
