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

/** One resource of a DeltaDiscoveryResponse, decoded. */
export interface DecodedDeltaResource {
  readonly name: string;
  readonly version: string;
  /** The resource as proto3 JSON with its `@type`. */
  readonly resource: Record<string, unknown>;
}

export interface DecodedDeltaResponse {
  readonly systemVersionInfo: string;
  readonly typeUrl: string;
  readonly nonce: string;
  readonly controlPlane: string;
  readonly resources: readonly DecodedDeltaResource[];
  readonly removed: readonly string[];
}

/** Decodes a DeltaDiscoveryResponse from the wire: for clients, tests and inspection. */
export function decodeDeltaResponse(bytes: Uint8Array): DecodedDeltaResponse {
  const type = lookupType('envoy.service.discovery.v3.DeltaDiscoveryResponse');
  const message = type.decode(bytes) as unknown as {
    system_version_info?: string;
    type_url?: string;
    nonce?: string;
    control_plane?: { identifier?: string };
    removed_resources?: string[];
    resources?: Array<{ name?: string; version?: string; resource?: { type_url: string; value: Uint8Array } }>;
  };
  return {
    systemVersionInfo: message.system_version_info ?? '',
    typeUrl: message.type_url ?? '',
    nonce: message.nonce ?? '',
    controlPlane: message.control_plane?.identifier ?? '',
    removed: message.removed_resources ?? [],
    resources: (message.resources ?? []).map(({ name, version, resource }) => {
      const resourceType = lookupType(resource!.type_url.slice(resource!.type_url.lastIndexOf('/') + 1));
      return { name: name ?? '', version: version ?? '', resource: { '@type': resource!.type_url, ...toProtoJson(resourceType, resourceType.decode(resource!.value)) } };
    }),
  };
}
