import { lookupType } from './protos.js';

/** The two ways a client speaks xDS on a stream: State of the World, or Delta (incremental). */
export const PROTOCOLS = ['sotw', 'delta'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

interface RequestBase {
  readonly typeUrl: string;
  readonly responseNonce: string;
  /** Present on a NACK (xDS: "NACK is indicated by the presence of error_detail"). */
  readonly errorDetail?: { readonly code: number; readonly message: string };
  /** Only the first request on a stream is guaranteed to carry it. */
  readonly nodeId?: string;
}

/** The parts of a SotW DiscoveryRequest Chancery reads. */
export interface XdsRequest extends RequestBase {
  readonly protocol: 'sotw';
  readonly versionInfo: string;
  readonly resourceNames: readonly string[];
}

/** The parts of a DeltaDiscoveryRequest Chancery reads. */
export interface DeltaRequest extends RequestBase {
  readonly protocol: 'delta';
  readonly subscribe: readonly string[];
  readonly unsubscribe: readonly string[];
  /** What the client holds from an earlier stream, name → version: only on a type's first request. */
  readonly initialVersions: Readonly<Record<string, string>>;
}

/** A request of either protocol; the stream it came on says which. */
export type StreamRequest = XdsRequest | DeltaRequest;

interface DecodedBase {
  type_url?: string;
  response_nonce?: string;
  node?: { id?: string } | null;
  error_detail?: { code?: number; message?: string } | null;
}

function baseOf(message: DecodedBase): RequestBase {
  const errorDetail = message.error_detail ? { code: message.error_detail.code ?? 0, message: message.error_detail.message ?? '' } : undefined;
  return {
    typeUrl: message.type_url ?? '',
    responseNonce: message.response_nonce ?? '',
    ...(errorDetail && { errorDetail }),
    ...(message.node?.id !== undefined && message.node.id !== '' && { nodeId: message.node.id }),
  };
}

let sotwType: ReturnType<typeof lookupType> | undefined;
let deltaType: ReturnType<typeof lookupType> | undefined;

/** Deserializes a DiscoveryRequest from the wire. */
export function decodeRequest(bytes: Uint8Array): XdsRequest {
  sotwType ??= lookupType('envoy.service.discovery.v3.DiscoveryRequest');
  const message = sotwType.decode(bytes) as unknown as DecodedBase & { version_info?: string; resource_names?: string[] };
  return { protocol: 'sotw', ...baseOf(message), versionInfo: message.version_info ?? '', resourceNames: message.resource_names ?? [] };
}

/** Deserializes a DeltaDiscoveryRequest from the wire. */
export function decodeDeltaRequest(bytes: Uint8Array): DeltaRequest {
  deltaType ??= lookupType('envoy.service.discovery.v3.DeltaDiscoveryRequest');
  const message = deltaType.decode(bytes) as unknown as DecodedBase & {
    resource_names_subscribe?: string[];
    resource_names_unsubscribe?: string[];
    initial_resource_versions?: Record<string, string>;
  };
  return {
    protocol: 'delta',
    ...baseOf(message),
    subscribe: message.resource_names_subscribe ?? [],
    unsubscribe: message.resource_names_unsubscribe ?? [],
    initialVersions: { ...message.initial_resource_versions },
  };
}

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
