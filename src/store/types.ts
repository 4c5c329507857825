import type { Observable } from 'rxjs';
import type { CertificateAuthority, Credential, Dataplane, DataplaneTls, GenerationInput, Held, Mesh, MeshResources, Resource, ResourceKey, ResourceType, Valid } from '../mesh/index.js';
import type { Policy } from '../policies/index.js';
import type { StoreUnavailableError } from './errors.js';
import type { SessionRecords } from './session-records.js';

declare const seqBrand: unique symbol;
declare const versionBrand: unique symbol;

/** The global position in the event log; the store revision a projection is at. */
export type Seq = number & { readonly [seqBrand]: true };
/** A resource's own version, for optimistic concurrency (`If-Match`). Starts at 1. */
export type ResourceVersion = number & { readonly [versionBrand]: true };

export const asSeq = (n: number) => n as Seq;
export const asResourceVersion = (n: number) => n as ResourceVersion;

/** The resource type named `T`. */
export type OfType<T extends ResourceType> = Extract<Resource, { readonly type: T }>;

export interface Author {
  readonly instance: string;
  /** The API caller, when known (remote address or a name the client gave). */
  readonly caller?: string;
}

interface EventBase {
  readonly seq: Seq;
  readonly key: ResourceKey;
  /** The resource's version after this event. */
  readonly version: ResourceVersion;
  /** ISO 8601. */
  readonly at: string;
  readonly by: Author;
  /**
   * The seq of the first event of the append that wrote this one: one write's events share it.
   * Absent on events a log wrote before it recorded batches.
   */
  readonly batch?: Seq;
}

export type ResourceEvent =
  | (EventBase & { readonly kind: 'upserted'; readonly resource: Valid<Resource> })
  | (EventBase & { readonly kind: 'deleted' });

/**
 * A write to append. `expected` is the version the writer read: a number, or `'absent'` for
 * "must not exist yet"; omitted means unconditional.
 *
 * `identicalTo` is the version the writer found holding exactly this resource: while the key's
 * head is still that version, the upsert changes nothing and appends nothing (DESIGN §7: a
 * write identical to what is stored answers `unchanged`). Checked under the append lock, like
 * `expected`: a version numbers one content of a key, so the head at it holds this resource.
 */
export type Write =
  | {
      readonly kind: 'upserted';
      readonly resource: Valid<Resource>;
      readonly expected?: ResourceVersion | 'absent';
      readonly identicalTo?: ResourceVersion;
    }
  | { readonly kind: 'deleted'; readonly key: ResourceKey; readonly expected?: ResourceVersion };

/**
 * The append-only event log every store backend implements (memory, PGlite, Postgres).
 * A batch is atomic: all its events are appended, or none and the promise rejects.
 */
/** How a batch is appended. */
export interface AppendOptions {
  /**
   * Append only if the log's last seq is still this: the batch lands exactly on the state it was
   * checked against, or not at all (`RevisionMovedError`).
   */
  readonly atRevision?: Seq;
}

export interface EventLog {
  /**
   * Appends a batch atomically, checking each write's `expected` version against the log. An
   * upsert whose `identicalTo` is its key's head appends no event (a batch of only those, none).
   * Rejects with `VersionConflictError` (nothing appended) on a mismatch, with `NotFoundError`
   * (nothing appended) when a write deletes a resource that does not exist, with
   * `RevisionMovedError` when `options.atRevision` is not the log's last seq, and with
   * `StoreUnavailableError` when the backend cannot be reached. Resolves only once committed.
   *
   * A key's versions count its events: 1 on create, +1 on each upsert, and a delete records
   * the deleted version + 1; a re-created key carries on from there, so versions never repeat.
   */
  append(writes: readonly Write[], author: Author, options?: AppendOptions): Promise<readonly ResourceEvent[]>;
  /**
   * Events with `seq > after`, in sequence order, at most `limit`. Rejects with
   * `RevisionCompactedError` when `after` is older than the checkpoint: some of those events
   * were compacted, and a reader must start again from `readCheckpoint()`.
   */
  readAfter(after: Seq, limit: number): Promise<readonly ResourceEvent[]>;
  /**
   * One key's retained events with `seq > after`, in sequence order, at most `limit` (the
   * history of a resource), and the horizon: events up to it were compacted.
   */
  readKey(key: ResourceKey, after: Seq, limit: number): Promise<KeyHistory>;
  /**
   * The resource as it was at `revision`: its last event at or before it (or, when the key
   * has none after the checkpoint, the checkpoint's copy); undefined if it did not exist
   * then. Rejects with `RevisionCompactedError` when `revision` is older than the checkpoint.
   * A revision past the end of the log answers as of the end.
   */
  readAt(key: ResourceKey, revision: Seq): Promise<Stored<Resource> | undefined>;
  /** The newest checkpoint: `{ seq: 0, resources: [] }` while nothing was compacted. */
  readCheckpoint(): Promise<Checkpoint>;
  /**
   * Keeps `checkpoint` as the newest and deletes the events it covers (`seq <= checkpoint.seq`)
   * with the older checkpoint, atomically; does nothing when the log already has a checkpoint
   * at or past it. Resolves with the horizon after. The caller folds the checkpoint from the
   * previous one and the events after it (see compaction.ts); a checkpoint past the end of the
   * log is a bug and rejects. Versions and sequence numbers carry on as if nothing was deleted.
   */
  writeCheckpoint(checkpoint: Checkpoint, author: Author): Promise<Seq>;
  /**
   * Wake-ups: emits when new events may be available. Only a hint (I7): the reader always
   * catches up with `readAfter`.
   */
  readonly wakeups: Observable<void>;
  /** Which instance serves which node, in the same database (issue 4). */
  readonly sessionRecords: SessionRecords;
  close(): Promise<void>;
}

/** A key's retained events, and the revision up to which the log's history was compacted. */
export interface KeyHistory {
  /** Events up to this seq were compacted; 0 when nothing was. */
  readonly horizon: Seq;
  readonly events: readonly ResourceEvent[];
}

/**
 * The projection's live resources at `seq`, kept in place of the events up to it (retention).
 * A store starts from the newest checkpoint plus the events after it.
 */
export interface Checkpoint {
  readonly seq: Seq;
  readonly resources: readonly Stored<Resource>[];
}

/**
 * How much history the log keeps (`--retention`); events older than that are folded into a
 * checkpoint. `{ events: N }` keeps the newest N events; `{ maxAge: ms }` keeps the events
 * written in the last `ms` milliseconds. Either way "what did X look like at revision R" can
 * be answered for every R from the checkpoint on.
 */
export type Retention = { readonly events: number } | { readonly maxAge: number };

export interface Stored<T extends Resource> extends Held<T> {
  readonly version: ResourceVersion;
  /** Sequence number of the event that last wrote it. */
  readonly seq: Seq;
  readonly updatedAt: string;
}

/**
 * One mesh at a revision. A new object whenever anything in the mesh changes, and the
 * same object otherwise, so consumers can memoise on identity.
 */
export interface MeshState extends MeshResources {
  readonly mesh: Stored<Mesh>;
  readonly dataplanes: ReadonlyMap<string, Stored<Dataplane>>;
  /** The mesh's CAs, which are credentials too (in `credentials`): here for the generator. */
  readonly authorities: ReadonlyMap<string, Stored<CertificateAuthority>>;
  /** The mesh's DataplaneTls statuses, by dataplane name: only here. */
  readonly tls: ReadonlyMap<string, Stored<DataplaneTls>>;
  readonly policies?: ReadonlyMap<string, Stored<Policy>>;
}

/** The current resources: the fold of the event log up to `revision`. Immutable. */
export interface Projection extends GenerationInput {
  readonly revision: Seq;
  /** When the event at `revision` was written (its `at`); absent at revision 0 or from a checkpoint. */
  readonly at?: string;
  readonly meshes: ReadonlyMap<string, MeshState>;
  /**
   * Keys and API tokens by `keyIdOf` of their key: what authentication reads. Apart from the
   * meshes, so a key rotation leaves every mesh's object, and the generator's work, alone.
   */
  readonly credentials: ReadonlyMap<string, Stored<Credential>>;
}

export interface WriteOptions {
  /** The version the caller read (`If-Match`); `'absent'` means "create only". */
  readonly expected?: ResourceVersion | 'absent';
  readonly caller?: string;
}

/** What one write did to one resource: `unchanged` appended nothing (DESIGN §7). */
export type WriteOutcome = 'created' | 'configured' | 'unchanged' | 'deleted';

export interface WrittenItem {
  readonly key: ResourceKey;
  /**
   * `created` when the store did not hold the resource as the write began: reported, not
   * enforced (a create racing this one may make both say so; `expected: 'absent'` enforces it).
   */
  readonly outcome: WriteOutcome;
  /** What is stored after an upsert: its new version, or, unchanged, the version it already had. */
  readonly stored?: Stored<Resource>;
}

/** What `ResourceStore.write` did. */
export interface Written {
  /** The revision before the write's first event: what the write followed. */
  readonly from: Seq;
  /** The revision once applied: its last event's seq; `from` when it appended nothing. */
  readonly revision: Seq;
  /** One per write, in order. */
  readonly items: readonly WrittenItem[];
  readonly events: readonly ResourceEvent[];
}

/** How `ResourceStore.write` appends a batch. */
export interface WriteBatchOptions extends Pick<WriteOptions, 'caller'>, AppendOptions {}

/**
 * What a batch would do, not appended (a dry run): the projection it would follow (the log's
 * end when planned) and the one it would make, with each write's outcome.
 */
export interface PlannedChange {
  readonly before: Projection;
  readonly after: Projection;
  /** One per write, in order; a re-created resource's version is the log's to number, and may differ. */
  readonly items: readonly WrittenItem[];
  /** The events it would append, numbered after `before.revision`. */
  readonly events: readonly ResourceEvent[];
}

/** What `ResourceStore.sizes()` counts: neither grows with the sessions served (I3). */
export interface StoreSizes {
  /** Subscribers to `projections`. */
  readonly listeners: number;
  /** Calls of `refresh` waiting for the log to be read. */
  readonly refreshes: number;
}

/**
 * The store the rest of Chancery uses: writes go to the event log, reads come from the
 * projection, and `projections` is the change feed that drives the session actors.
 */
export interface ResourceStore {
  /** Rebuilds the projection from the log and follows it; creates Mesh `default` on an empty log. */
  start(): Promise<void>;
  close(): Promise<void>;
  /**
   * True once started and caught up with the log; false again while the log is unreachable
   * (a catch-up failed), until a catch-up succeeds. `/readyz` reports it.
   */
  readonly ready: boolean;
  /** Why the last catch-up failed, while it keeps failing (the reason `/readyz` can give). */
  readonly failure: StoreUnavailableError | undefined;
  readonly projection: Projection;
  /**
   * Reads the log to its end now and resolves with the projection after it; concurrent calls
   * share their reads. Rejects with `StoreUnavailableError` when the log cannot be read.
   */
  refresh(): Promise<Projection>;
  /** Emits the current projection on subscribe, then each newer one, in revision order. */
  readonly projections: Observable<Projection>;
  /** For tests and diagnostics: who listens to the change feed or waits on a `refresh` now. */
  sizes(): StoreSizes;
  /**
   * Appends writes as one batch (one author, consecutive revisions, all or none), each upsert
   * of a resource identical to what the projection holds made conditional on it staying so
   * (`identicalTo`): such a write is `unchanged` and appends nothing. Keys must be distinct.
   * Rejects as `put` and `delete` do, before anything is appended.
   */
  write(writes: readonly Write[], options?: WriteBatchOptions): Promise<Written>;
  /**
   * What `write` would do, appending nothing: the store reads the log to its end, then checks the
   * batch as the log would (rejecting as `write` does) and folds it into a copy of the projection.
   */
  plan(writes: readonly Write[], options?: Pick<WriteOptions, 'caller'>): Promise<PlannedChange>;
  /**
   * Creates or replaces a resource. Resolves with what was stored once it is committed (or, when
   * identical to what is stored, with that, appending nothing); rejects
   * with `MeshNotFoundError` for a Dataplane whose mesh the log does not have.
   */
  put(resource: Valid<Resource>, options?: WriteOptions): Promise<Stored<Resource>>;
  /**
   * Deletes a resource; deleting a Mesh deletes the Dataplanes and keys the log has in it, in
   * the same batch (write-plan.ts), including ones this projection has not read yet.
   */
  delete(key: ResourceKey, options?: WriteOptions): Promise<void>;
  get(key: ResourceKey): Stored<Resource> | undefined;
  /** The resources of a type, in one mesh when given (a global type's by its own name), sorted by name. */
  list<T extends ResourceType>(type: T, mesh?: string): readonly Stored<OfType<T>>[];
  /**
   * The resource as it was at `revision`; undefined if it did not exist then. Rejects with
   * `RevisionCompactedError` for a revision older than the retained history, and with
   * `FutureRevisionError` for one the log has not reached.
   */
  getAt(key: ResourceKey, revision: Seq): Promise<Stored<Resource> | undefined>;
  /**
   * The resources as they were at `revision`: this projection with every key written since put
   * back as it was (its cost grows with the history since, not with the store). Rejects with
   * `RevisionCompactedError` for a revision older than the retained history, and with
   * `FutureRevisionError` for one the log has not reached.
   */
  projectionAt(revision: Seq): Promise<Projection>;
  /** The log after `after` (audit, tools); `RevisionCompactedError` when `after` was compacted. */
  readEvents(after: Seq, limit: number): Promise<readonly ResourceEvent[]>;
  /** One resource's retained events after `after`, and the horizon of the history. */
  history(key: ResourceKey, after: Seq, limit: number): Promise<KeyHistory>;
  /**
   * Folds the events the retention setting does not keep into a new checkpoint, now. Resolves
   * with the horizon (events up to it are gone), or undefined without a retention setting.
   * The store also compacts on start and periodically.
   */
  compact(): Promise<Seq | undefined>;
}
