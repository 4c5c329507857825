export { checkRetention, describeRetention, type Compaction } from './compaction.js';
export { describeKey } from './describe-key.js';
export {
  FutureRevisionError,
  InvalidRetentionError,
  MeshNotFoundError,
  NotFoundError,
  RevisionCompactedError,
  RevisionMovedError,
  StoreRejectedWriteError,
  StoreSchemaTooNewError,
  StoreUnavailableError,
  UnsupportedStoreError,
  VersionConflictError,
} from './errors.js';
export { MemoryEventLog, type MemoryEventLogOptions } from './memory-event-log.js';
export { describeStoreSpec, openEventLog, parseStoreSpec, STORE_SPECS, type OpenEventLogOptions, type StoreSpec } from './open-event-log.js';
export { applyEvents, checkpointOf, emptyProjection, projectionOf, storedIn } from './projection.js';
export {
  createMemoryStore,
  createResourceStore,
  type MemoryStoreOptions,
  type ResourceStoreOptions,
} from './resource-store.js';
export {
  MemorySessionRecords,
  type InstanceRecord,
  type SessionRecord,
  type SessionRecordBatch,
  type SessionRecordInput,
  type SessionRecords,
} from './session-records.js';
export {
  asResourceVersion,
  asSeq,
  type AppendOptions,
  type Author,
  type Checkpoint,
  type EventLog,
  type KeyHistory,
  type MeshState,
  type Projection,
  type ResourceEvent,
  type ResourceStore,
  type ResourceVersion,
  type Retention,
  type Seq,
  type Stored,
  type StoreSizes,
  type PlannedChange,
  type Write,
  type WriteBatchOptions,
  type WriteOptions,
  type WriteOutcome,
  type Written,
  type WrittenItem,
} from './types.js';
export { sameResource } from './same-resource.js';
export { keyOfWrite } from './write-plan.js';
