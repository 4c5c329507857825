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

interface DecodedRequest {
  version_info?: string;
  node?: { id?: string } | null;
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string } | null;
}

let requestType: ReturnType<typeof lookupType> | undefined;

/** Deserializes a DiscoveryRequest from the wire. */
export function decodeRequest(bytes: Uint8Array): XdsRequest {
  requestType ??= lookupType('envoy.service.discovery.v3.DiscoveryRequest');
  const message = requestType.decode(bytes) as unknown as DecodedRequest;
  const errorDetail = message.error_detail
    ? { code: message.error_detail.code ?? 0, message: message.error_detail.message ?? '' }
    : undefined;
  return {
    typeUrl: message.type_url ?? '',
    versionInfo: message.version_info ?? '',
    resourceNames: message.resource_names ?? [],
    responseNonce: message.response_nonce ?? '',
    ...(errorDetail && { errorDetail }),
    ...(message.node?.id !== undefined && message.node.id !== '' && { nodeId: message.node.id }),
  };
}

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
