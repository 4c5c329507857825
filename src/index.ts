/**
 * Chancery as a library: run an xDS control plane inside another Node service, or use its
 * session machine in your own tests and tools.
 */
export { createControlPlane, type ControlPlane, type ControlPlaneSizes } from './control-plane.js';
export type { ControlPlaneOptions } from './control-plane-options.js';
export { aggregateMetrics, type ControlPlaneMetrics, type MetricsSource } from './api/index.js';
export type { InspectOptions } from './inspector/index.js';
export { ChanceryError } from './common/index.js';
export { InvalidResourceInputError } from './errors.js';
export {
  createCertificateAuthority,
  issueApiToken,
  issueCertificate,
  issueDataplaneToken,
  issueServiceAccount,
  rotateSigningKey,
  type IssuedApiToken,
  type IssuedDataplaneToken,
  type IssuedServiceAccount,
  type RefusalSummary,
  type ServiceAccountFile,
  type TlsFilePaths,
} from './identity/index.js';
export type { RefusedStream, StreamAuthentication } from './xds/index.js';
export {
  FutureRevisionError,
  InvalidRetentionError,
  RevisionCompactedError,
  UnsupportedStoreError,
} from './store/index.js';
export {
  SESSION_STATES,
  sessionMachine,
  type Generate,
  type Generation,
  type SessionContext,
  type SessionEvent,
  type SessionInput,
  type SessionIntent,
  type SessionMachine,
  type SessionState,
  type SessionStateId,
  type SessionView,
  type StreamInfo,
  type TransitionRecord,
  type TypeStatus,
} from './machines/index.js';
export {
  DEFAULT_MESH,
  nodeIdOf,
  parseNodeId,
  validate,
  type ApiRole,
  type ApiToken,
  type Dataplane,
  type DataplaneAuth,
  type Inbound,
  type Mesh,
  type Outbound,
  type Resource,
  type ResourceKey,
  type ServiceAccountKey,
  type SigningKey,
  type ValidationIssue,
} from './mesh/index.js';
export type { EventLog, KeyHistory, ResourceEvent, ResourceStore, Retention, Stored, WriteOptions } from './store/index.js';
export { CLUSTER, ENDPOINT, LISTENER, PUSH_ORDER, ROUTE, type TypeUrl } from './xds/index.js';
