import { excerpt, textProblem } from '../common/index.js';
import type { EndStatus } from './stream-writer.js';
import { structDepth } from './struct-depth.js';
import type { Protocol, StreamRequest } from './stream/index.js';

/**
 * What one client may send the xDS server (issue 11). Each limit crossed ends the stream with
 * a gRPC status whose message says which limit, never repeating the offending value, so that
 * it stays short enough to deliver. `chancery run` sets them with `--xds-max-*` flags; the
 * defaults (DEFAULTS.xdsLimits) leave room for a real Envoy's bursts on connect.
 */
export interface XdsLimits {
  /** Characters of `node.id`. A valid id, `<mesh>.<name>`, has at most 127. */
  readonly maxNodeIdLength: number;
  /** Bytes of `node.metadata`, encoded. */
  readonly maxNodeMetadataBytes: number;
  /** Levels of `node.metadata`: 1 for a Struct of scalars, one more per Struct or list inside. */
  readonly maxNodeMetadataDepth: number;
  /** Resource names in one request. */
  readonly maxResourceNames: number;
  /** Bytes of one request message; grpc-js refuses a larger one with RESOURCE_EXHAUSTED. */
  readonly maxRequestBytes: number;
  /** Streams open at once on one client connection. */
  readonly maxStreamsPerConnection: number;
  /** Requests one stream may send per second, in bursts of as many. */
  readonly maxRequestsPerSecond: number;
}

/**
 * The longest type URL, version, nonce or resource name a request may carry: far past any a
 * client uses, and what the session records (saved in the store) may hold per field.
 */
export const MAX_REQUEST_TEXT = 4_096;

/** Why a request whose bytes could not be read ends its stream. */
export function malformedRequest(reason: string, protocol: Protocol): EndStatus {
  return { code: 'INVALID_ARGUMENT', message: `the message is not a ${protocol === 'delta' ? 'DeltaDiscoveryRequest' : 'DiscoveryRequest'}: ${reason}` };
}

/**
 * Why a request of either protocol ends its stream, or undefined when it may go on. The node
 * is read, and so checked, only on a stream's first request (xDS: node only on the first request).
 */
export function refuseRequest(request: StreamRequest, nodeMetadata: Uint8Array | undefined, first: boolean, limits: XdsLimits): EndStatus | undefined {
  return (
    (first ? refuseNode(request.nodeId, nodeMetadata, limits) : undefined) ??
    refuseText('type_url', request.typeUrl) ??
    refuseText('response_nonce', request.responseNonce) ??
    (request.protocol === 'sotw'
      ? (refuseText('version_info', request.versionInfo) ?? refuseResourceNames('resource_names', request.resourceNames, limits))
      : (refuseResourceNames('resource_names_subscribe', request.subscribe, limits) ??
        refuseResourceNames('resource_names_unsubscribe', request.unsubscribe, limits) ??
        refuseHeld(request.initialVersions, limits)))
  );
}

/** Why a Delta request's `initial_resource_versions` ends its stream: too many, or a name or version that is not storable text. */
function refuseHeld(held: Readonly<Record<string, string>>, limits: XdsLimits): EndStatus | undefined {
  const names = Object.keys(held);
  const refusal = refuseResourceNames('initial_resource_versions', names, limits);
  if (refusal !== undefined) return refusal;
  for (const name of names) {
    const problem = textProblem(held[name]!, MAX_REQUEST_TEXT);
    if (problem !== undefined) return invalidText(`initial_resource_versions[${excerpt(name, 40)}]`, problem);
  }
  return undefined;
}

/** Why a request's node ends its stream: an over-long id, or metadata too large, too deep or not a Struct. */
export function refuseNode(id: string | undefined, metadata: Uint8Array | undefined, limits: XdsLimits): EndStatus | undefined {
  if (id !== undefined) {
    if (id.length > limits.maxNodeIdLength) {
      return exhausted(`node.id has ${id.length} characters; at most ${limits.maxNodeIdLength} are accepted, and a <mesh>.<name> has at most 127`);
    }
    const refusal = refuseText('node.id', id);
    if (refusal !== undefined) return refusal;
  }
  if (metadata === undefined) return undefined;
  if (metadata.length > limits.maxNodeMetadataBytes) {
    return exhausted(`node.metadata is ${metadata.length} bytes; at most ${limits.maxNodeMetadataBytes} are accepted`);
  }
  const depth = structDepth(metadata, limits.maxNodeMetadataDepth);
  if (depth === undefined) return { code: 'INVALID_ARGUMENT', message: 'node.metadata is not a google.protobuf.Struct' };
  if (depth > limits.maxNodeMetadataDepth) return exhausted(`node.metadata nests deeper than ${limits.maxNodeMetadataDepth} levels`);
  return undefined;
}

/** Why a request's list of resource names ends its stream: too many, or one that is not storable text. */
export function refuseResourceNames(field: string, names: readonly string[], limits: XdsLimits): EndStatus | undefined {
  if (names.length > limits.maxResourceNames) {
    return exhausted(`${field} lists ${names.length} names; at most ${limits.maxResourceNames} are accepted in one request`);
  }
  for (let i = 0; i < names.length; i += 1) {
    // The field's label is made only for a refusal: an ACK of ten names makes no strings.
    const problem = textProblem(names[i]!, MAX_REQUEST_TEXT);
    if (problem !== undefined) return invalidText(`${field}[${i}]`, problem);
  }
  return undefined;
}

/**
 * A text field no resource or session can hold: it would never match a name Chancery serves,
 * and the session records that show it are saved in the store, which must be able to keep it.
 */
function refuseText(field: string, value: string): EndStatus | undefined {
  const problem = textProblem(value, MAX_REQUEST_TEXT);
  return problem === undefined ? undefined : invalidText(field, problem);
}

function invalidText(field: string, problem: string): EndStatus {
  return { code: 'INVALID_ARGUMENT', message: `${field} ${problem}` };
}

function exhausted(message: string): EndStatus {
  return { code: 'RESOURCE_EXHAUSTED', message };
}
