export { contentHash } from './content-hash.js';
export { decodeAny, decodeResponse, type DecodedResponse } from './decode.js';
export { encodeCount, encodeResource, InvalidResourceError, type EncodedResource } from './encode.js';
export { toProtoJson } from './proto-json.js';
export { lookupType } from './protos.js';
export { ResourceSet, versionOf } from './resource-set.js';
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
export { XdsServer, type SessionGateway, type XdsServerOptions } from './sotw-server.js';
export { StreamLedger, type RequestOutcome, type Sent, type TypeReport, type TypeStatus, type XdsResponse } from './stream-ledger.js';
export { UnsupportedNodeMatcherError, type ClientResource, type ClientStatus, type ClientStatusSource } from './client-status.js';
export type { EndStatus, StreamSink } from './stream-writer.js';
export { CLUSTER, ENDPOINT, FULL_STATE, isTypeUrl, LISTENER, messageName, PUSH_ORDER, ROUTE, SHORT_NAME, type TypeUrl } from './type-urls.js';
export { decodeRequest, encodeRequest, type XdsRequest } from './xds-request.js';
