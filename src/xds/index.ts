export { contentHash } from './content-hash.js';
export { decodeAny, decodeDeltaResponse, decodeResponse, type DecodedDeltaResource, type DecodedDeltaResponse, type DecodedResponse } from './decode.js';
export { anyOf, encodeCount, encodeResource, InvalidResourceError, type EncodedResource } from './encode.js';
export { toProtoJson } from './proto-json.js';
export { lookupType } from './protos.js';
export { ResourceSet, sameContent, sortedByName, versionOf } from './resource-set.js';
export {
  assertSealed,
  EmptyConfigurationError,
  ForgedSnapshotError,
  MissingReferenceError,
  sealSnapshot,
  type SealResult,
  type Snapshot,
  type SnapshotParts,
  type TypeSnapshot,
} from './snapshot.js';
export { MAX_REQUEST_TEXT, type XdsLimits } from './request-limits.js';
export { grpcServerCredentials, type TlsSource } from './tls-credentials.js';
export { ConnectWindow, type ConnectWindowOptions } from './connect-window.js';
export { XdsServer, type SessionGateway, type XdsServerOptions, type XdsServerSizes } from './xds-server.js';
export {
  DeltaLedger,
  openLedger,
  PROTOCOLS,
  requestKind,
  SotwLedger,
  Subscription,
  type DeltaRequest,
  type DeltaResponse,
  type Ledger,
  type Protocol,
  type RequestKind,
  type RequestOutcome,
  type Sent,
  type SotwResponse,
  type StreamRequest,
  type TypedRequest,
  type TypeReport,
  type TypeStatus,
  type XdsRequest,
  type XdsResponse,
} from './stream/index.js';
export { UnsupportedNodeMatcherError, type ClientResource, type ClientStatus, type ClientStatusSource } from './client-status.js';
export type { EndStatus, StreamSink } from './stream-writer.js';
export {
  ADMIT_ALL,
  expiredRefusal,
  REFUSAL_REASONS,
  type Admission,
  type RefusalReason,
  type Refusal,
  type RefusedStream,
  type StreamAdmission,
  type StreamAuthentication,
} from './stream-admission.js';
export { CLUSTER, ENDPOINT, FULL_STATE, isTypeUrl, LISTENER, messageName, PUSH_ORDER, ROUTE, SECRET, SHORT_NAME, type TypeUrl } from './type-urls.js';
export { decodeDeltaRequest, decodeRequest, encodeDeltaRequest, encodeRequest } from './xds-request.js';
