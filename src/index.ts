/**
 * Chancery as a library: run an xDS control plane inside another Node service, or use its
 * session machine in your own tests and tools.
 */
export { createControlPlane, type ControlPlane } from './control-plane.js';
export type { ControlPlaneOptions } from './control-plane-options.js';
export type { ControlPlaneMetrics } from './api/index.js';
export type { InspectOptions } from './machines/inspect-options.js';
export { ChanceryError } from './chancery-error.js';
export { InvalidResourceInputError } from './errors.js';
export {
  FutureRevisionError,
  InvalidRetentionError,
  RevisionCompactedError,
  UnsupportedStoreError,
} from './store/index.js';
export { sessionMachine, type SessionMachine } from './machines/session-machine.js';
export type { SessionEvent, SessionIntent, StreamInfo } from './machines/session-events.js';
export type { SessionContext, SessionInput } from './machines/session-context.js';
export type { SessionState, SessionView, TransitionRecord, TypeStatus } from './machines/session-view.js';
export {
  DEFAULT_MESH,
  nodeIdOf,
  parseNodeId,
  validate,
  type Dataplane,
  type Inbound,
  type Mesh,
  type Outbound,
  type Resource,
  type ResourceKey,
  type ValidationIssue,
} from './mesh/index.js';
export type { EventLog, KeyHistory, ResourceEvent, ResourceStore, Retention, Stored, WriteOptions } from './store/index.js';
export { CLUSTER, ENDPOINT, LISTENER, PUSH_ORDER, ROUTE, type TypeUrl } from './xds/type-urls.js';
