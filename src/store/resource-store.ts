import { interval, type Observable, type Subscription } from 'rxjs';
import { isPolicyType } from '../policies/index.js';
import { DEFAULT_MESH, isDnsLabel, keyOf, type Mesh, type Resource, type ResourceKey, type ResourceType, type Valid } from '../mesh/index.js';
import { keyIdOf, keyOfWrite, planWrites } from './write-plan.js';
import { logStateOf, markBatch, outcomesOf, plannedEvents } from './write-batch.js';
import { ChangeFeed } from './change-feed.js';
import { describeKey } from './describe-key.js';
import { checkRetention, compact, type Compaction } from './compaction.js';
import {
  FutureRevisionError,
  NotFoundError,
  RevisionCompactedError,
  StoreUnavailableError,
  VersionConflictError,
} from './errors.js';
import { MemoryEventLog } from './memory-event-log.js';
import { applyEvents, storedIn, withResources, type KeyState } from './projection.js';
import {
  asSeq,
  type Author,
  type EventLog,
  type KeyHistory,
  type MeshState,
  type OfType,
  type Projection,
  type ResourceEvent,
  type ResourceStore,
  type Retention,
  type Seq,
  type Stored,
  type StoreSizes,
  type PlannedChange,
  type Write,
  type WriteBatchOptions,
  type WriteOptions,
  type Written,
} from './types.js';

export interface ResourceStoreOptions {
  /** Names this instance in each event's author (`by.instance`). */
  readonly instance: string;
  /**
   * Triggers the periodic resync that covers lost wake-ups (I7); default every 5 s. Tests pass
   * a Subject so they control time.
   */
  readonly resync?: Observable<unknown>;
  /** Events per `readAfter` when catching up; default 1000. */
  readonly pageSize?: number;
  /** Told of each failed catch-up or compaction (log it); the store keeps its last projection and retries. */
  readonly onError?: (error: StoreUnavailableError) => void;
  /**
   * How much history to keep; older events are folded into a checkpoint on start and on each
   * `compaction` trigger. Default: keep every event.
   */
  readonly retention?: Retention;
  /** Triggers compaction when `retention` is set; default every minute. Tests pass a Subject. */
  readonly compaction?: Observable<unknown>;
  /** Told of each compaction that moved the horizon (log it). */
  readonly onCompacted?: (compaction: Compaction) => void;
  /** The clock `{ maxAge }` retention measures against; default the system clock. */
  readonly now?: () => Date;
}

export interface MemoryStoreOptions extends ResourceStoreOptions {
  /** Stamps each event's `at` (and is the retention clock); default the system clock. */
  readonly now?: () => Date;
}

const DEFAULT_RESYNC_MS = 5_000;
const DEFAULT_COMPACTION_MS = 60_000;
const DEFAULT_PAGE_SIZE = 1_000;
/** Resources `projectionAt` reads from the log at a time. */
const READS_AT_ONCE = 32;

/**
 * A store over any event log. It does not close the log: whoever opened the log closes it,
 * after the store.
 */
export function createResourceStore(log: EventLog, options: ResourceStoreOptions): ResourceStore {
  return new EventSourcedStore(log, options, false);
}

/** A store over a fresh `MemoryEventLog`, which it closes on `close()`. */
export function createMemoryStore(options: MemoryStoreOptions): ResourceStore {
  return new EventSourcedStore(new MemoryEventLog({ now: options.now }), options, true);
}

class EventSourcedStore implements ResourceStore {
  readonly #log: EventLog;
  readonly #ownsLog: boolean;
  readonly #feed: ChangeFeed;
  readonly #author: Author;
  readonly #options: ResourceStoreOptions;
  readonly #retention: Retention | undefined;
  readonly projections: Observable<Projection>;
  #compactions: Subscription | undefined;
  #compacting: Promise<Compaction> | undefined;
  #started = false;
  #closed = false;

  constructor(log: EventLog, options: ResourceStoreOptions, ownsLog: boolean) {
    // Refused here, before anything starts: a setting that keeps nothing is a mistake.
    this.#retention = options.retention === undefined ? undefined : checkRetention(options.retention);
    this.#log = log;
    this.#ownsLog = ownsLog;
    this.#options = options;
    this.#feed = new ChangeFeed(log, {
      resync: options.resync ?? interval(DEFAULT_RESYNC_MS),
      pageSize: options.pageSize ?? DEFAULT_PAGE_SIZE,
      onError: options.onError,
    });
    this.#author = { instance: options.instance };
    this.projections = this.#feed.projections;
  }

  /**
   * Started, not closed, and the last catch-up succeeded: false during an outage, true again
   * after the first catch-up that reaches the log (the feed retries on each wake-up and resync).
   */
  get ready(): boolean {
    return this.#started && !this.#closed && this.#feed.failure === undefined;
  }

  get failure(): StoreUnavailableError | undefined {
    return this.#closed ? undefined : this.#feed.failure;
  }

  get projection(): Projection {
    return this.#feed.projection;
  }

  sizes(): StoreSizes {
    return this.#feed.sizes();
  }

  async start(): Promise<void> {
    await this.#feed.start();
    try {
      // Every seq is at least 1, so revision 0 after a full catch-up means the log is empty.
      if (this.#feed.projection.revision === 0) await this.#createDefaultMesh();
    } catch (error) {
      await this.#feed.stop();
      throw error;
    }
    this.#started = true;
    if (this.#retention !== undefined) {
      // Compacting before serving keeps a log that grew while no instance ran within bounds;
      // a failure is reported and retried on the next trigger, it does not stop the start.
      await this.#compactReporting();
      this.#compactions = (this.#options.compaction ?? interval(DEFAULT_COMPACTION_MS)).subscribe(() => {
        if (this.#compacting === undefined) void this.#compactReporting();
      });
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#compactions?.unsubscribe();
    await this.#compacting?.catch(() => {});
    await this.#feed.stop();
    if (this.#ownsLog) await this.#log.close();
  }

  async write(writes: readonly Write[], options: WriteBatchOptions = {}): Promise<Written> {
    this.#assertRunning(`writing ${writes.length} resources`);
    for (const write of writes) if (write.kind === 'deleted' && !couldExist(write.key)) throw new NotFoundError(keyOfWrite(write));
    const batch = markBatch(writes, this.projection);
    // A Dataplane whose mesh is not live in the log is refused by the log (MeshNotFoundError),
    // which knows of meshes another instance created that this projection has not read yet.
    // A Mesh's dataplanes are deleted with it by the log, in the same batch (write-plan.ts).
    const atRevision = options.atRevision;
    const events = await this.#log.append(batch.writes, this.#authorFor(options), atRevision === undefined ? {} : { atRevision });
    await this.#applied(events);
    const first = events[0];
    const revision = events.at(-1)?.seq ?? this.projection.revision;
    return { from: first === undefined ? revision : asSeq(first.seq - 1), revision, items: outcomesOf(batch, events), events };
  }

  async plan(writes: readonly Write[], options: Pick<WriteOptions, 'caller'> = {}): Promise<PlannedChange> {
    this.#assertRunning(`checking ${writes.length} writes`);
    for (const write of writes) if (write.kind === 'deleted' && !couldExist(write.key)) throw new NotFoundError(keyOfWrite(write));
    // The revision the write would follow: the log's end, not what this projection last read.
    const before = await this.refresh();
    const batch = markBatch(writes, before);
    // The checks the log would make (versions, missing resources and meshes), on the same plan.
    const plan = planWrites(batch.writes, logStateOf(before));
    const at = (this.#options.now ?? (() => new Date()))().toISOString();
    const events = plannedEvents(plan, before.revision, at, this.#authorFor(options));
    return { before, after: applyEvents(before, events), items: outcomesOf(batch, events), events };
  }

  async put(resource: Valid<Resource>, options: WriteOptions = {}): Promise<Stored<Resource>> {
    this.#assertRunning(`writing ${describeKey(keyOf(resource))}`);
    const { items } = await this.write([{ kind: 'upserted', resource, expected: options.expected }], options);
    return items[0]!.stored!;
  }

  async delete(key: ResourceKey, options: WriteOptions = {}): Promise<void> {
    this.#assertRunning(`deleting ${describeKey(key)}`);
    const { expected } = options;
    if (expected === 'absent') {
      // "Delete only if absent" can never succeed: say why with the error a delete would give.
      const current = this.get(key);
      throw current === undefined ? new NotFoundError(key) : new VersionConflictError(key, 'absent', current.version);
    }
    // A Mesh's dataplanes are deleted with it by the log, in the same batch (write-plan.ts),
    // from the log's own heads: not from this projection, which may lag a concurrent write.
    await this.write([{ kind: 'deleted', key, expected }], options);
  }

  get(key: ResourceKey): Stored<Resource> | undefined {
    return storedIn(this.projection, key);
  }

  list<T extends ResourceType>(type: T, mesh?: string): readonly Stored<OfType<T>>[] {
    const { meshes, credentials } = this.projection;
    if (type === 'DataplaneTls') {
      const state = mesh === undefined ? undefined : meshes.get(mesh);
      const all = mesh === undefined ? [...meshes.values()].flatMap((each) => [...each.tls.values()]) : [...(state?.tls.values() ?? [])];
      return byName(new Map(all.map((stored) => [keyIdOf(keyOf(stored.resource)), stored]))) as Stored<OfType<T>>[];
    }
    if (isPolicyType(type)) {
      const states = mesh === undefined ? byName(meshes) : [meshes.get(mesh)].filter((state) => state !== undefined);
      const listed = states.flatMap((state) => byName(new Map([...(state.policies ?? [])].filter(([, stored]) => stored.resource.type === type))));
      return listed as Stored<OfType<T>>[];
    }
    if (type !== 'Mesh' && type !== 'Dataplane') {
      const matching = [...credentials.values()].filter(({ resource }) => resource.type === type && (mesh === undefined || keyOf(resource).mesh === mesh));
      return byName(new Map(matching.map((stored) => [keyIdOf(keyOf(stored.resource)), stored]))) as Stored<OfType<T>>[];
    }
    let states: readonly MeshState[];
    if (mesh === undefined) states = byName(meshes);
    else {
      const state = meshes.get(mesh);
      states = state === undefined ? [] : [state];
    }
    const listed = type === 'Mesh' ? states.map((state) => state.mesh) : states.flatMap((state) => byName(state.dataplanes));
    return listed as Stored<OfType<T>>[];
  }

  refresh(): Promise<Projection> {
    return this.#feed.refresh();
  }

  async getAt(key: ResourceKey, revision: Seq): Promise<Stored<Resource> | undefined> {
    this.#assertRunning(`reading ${describeKey(key)} at revision ${revision}`);
    if (revision > this.projection.revision) {
      // Another instance may have appended it: the log's end decides, not this projection's.
      const { revision: current } = await this.#feed.refresh();
      if (revision > current) throw new FutureRevisionError(revision, current);
    }
    return couldExist(key) ? this.#log.readAt(key, revision) : undefined;
  }

  async projectionAt(revision: Seq): Promise<Projection> {
    this.#assertRunning(`reading the resources at revision ${revision}`);
    let now = this.projection;
    if (revision > now.revision) {
      now = await this.#feed.refresh();
      if (revision > now.revision) throw new FutureRevisionError(revision, now.revision);
    }
    if (revision === now.revision) return now;
    // The keys written since, each put back as it was: as cheap as the history since `revision`.
    const touched = new Map<string, ResourceKey>();
    const pageSize = this.#options.pageSize ?? DEFAULT_PAGE_SIZE;
    for (let after = revision; after < now.revision; ) {
      const page = await this.#log.readAfter(after, pageSize);
      for (const event of page) if (event.seq <= now.revision) touched.set(keyIdOf(event.key), event.key);
      const last = page.at(-1);
      if (last === undefined) break;
      after = last.seq;
    }
    const keys = [...touched.values()];
    const states: KeyState[] = [];
    for (let i = 0; i < keys.length; i += READS_AT_ONCE) {
      const chunk = keys.slice(i, i + READS_AT_ONCE);
      const read = await Promise.all(chunk.map((key) => this.#log.readAt(key, revision)));
      chunk.forEach((key, j) => states.push({ key, stored: read[j] }));
    }
    return withResources(now, revision, states);
  }

  readEvents(after: Seq, limit: number): Promise<readonly ResourceEvent[]> {
    this.#assertRunning(`reading events after seq ${after}`);
    return this.#log.readAfter(after, limit);
  }

  history(key: ResourceKey, after: Seq, limit: number): Promise<KeyHistory> {
    this.#assertRunning(`reading the history of ${describeKey(key)}`);
    if (!couldExist(key)) return Promise.resolve({ horizon: asSeq(0), events: [] });
    return this.#log.readKey(key, after, limit);
  }

  async compact(): Promise<Seq | undefined> {
    this.#assertRunning('compacting the event log');
    if (this.#retention === undefined) return undefined;
    // One compaction at a time: a second caller shares the one running.
    const running = (this.#compacting ??= this.#compactOnce(this.#retention).finally(() => (this.#compacting = undefined)));
    return (await running).horizon;
  }

  #compactOnce(retention: Retention): Promise<Compaction> {
    return compact(this.#log, retention, {
      head: this.projection.revision,
      now: (this.#options.now ?? (() => new Date()))(),
      author: this.#author,
      pageSize: this.#options.pageSize ?? DEFAULT_PAGE_SIZE,
    }).then((compaction) => {
      if (compaction.horizon > compaction.previous) this.#options.onCompacted?.(compaction);
      return compaction;
    });
  }

  async #compactReporting(): Promise<void> {
    try {
      await this.compact();
    } catch (error) {
      // Another instance compacted past this fold meanwhile: its checkpoint does the job.
      if (error instanceof RevisionCompactedError) return;
      this.#options.onError?.(
        error instanceof StoreUnavailableError ? error : new StoreUnavailableError('compacting the event log', { cause: error }),
      );
    }
  }

  async #createDefaultMesh(): Promise<void> {
    // DESIGN §6: `default` exists on a fresh store, open to any dataplane so the walk-through
    // works on loopback (docs/security.md, "Securing Chancery", shows a mesh requiring tokens).
    const mesh = { type: 'Mesh', name: DEFAULT_MESH, dataplaneAuth: 'none' } as Valid<Mesh>;
    try {
      await this.#applied(await this.#log.append([{ kind: 'upserted', resource: mesh, expected: 'absent' }], this.#author));
    } catch (error) {
      // Instances starting together on one empty log race to create it; one wins, and the
      // others catch up with its event.
      if (!(error instanceof VersionConflictError)) throw error;
      this.#feed.catchUp();
      await this.#feed.applied(asSeq(1));
    }
  }

  /**
   * Waits until the projection includes the events, so a caller whose write resolved reads it.
   * The writer asks for the catch-up itself instead of waiting for a wake-up that may be lost.
   */
  async #applied(events: readonly ResourceEvent[]): Promise<void> {
    const last = events.at(-1);
    if (last === undefined) return;
    this.#feed.catchUp();
    await this.#feed.applied(last.seq);
  }

  #authorFor(options: WriteOptions): Author {
    return options.caller === undefined ? this.#author : { instance: this.#author.instance, caller: options.caller };
  }

  #assertRunning(operation: string): void {
    if (this.#closed) throw new StoreUnavailableError(operation, { cause: new Error('the store is closed') });
    // Not `ready`: during an outage a write is still tried, and fails on its own if the log
    // is unreachable (or succeeds the moment the database is back).
    if (!this.#started) throw new StoreUnavailableError(operation, { cause: new Error('the store has not started') });
  }
}

/** Values sorted by key, by UTF-16 code unit: the same order on every instance, whatever its locale. */
function byName<T>(map: ReadonlyMap<string, T>): T[] {
  return [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, value]) => value);
}

/**
 * Whether the log can hold `key`: only validated resources are written, and their names are
 * DNS labels. A read or delete of any other key (a name from a URL) is answered without asking
 * the log: a NUL in it would make the SQL logs' query fail (issue 11), an error no request for
 * a missing resource should meet.
 */
function couldExist(key: ResourceKey): boolean {
  return isDnsLabel(key.mesh) && isDnsLabel(key.name);
}
