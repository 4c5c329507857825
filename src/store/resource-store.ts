import { interval, type Observable } from 'rxjs';
import { DEFAULT_MESH, keyOf, type Mesh, type Resource, type ResourceKey, type Valid } from '../mesh/index.js';
import { ChangeFeed } from './change-feed.js';
import { describeKey } from './describe-key.js';
import { MeshNotFoundError, NotFoundError, StoreUnavailableError, VersionConflictError } from './errors.js';
import { MemoryEventLog } from './memory-event-log.js';
import { storedOf } from './projection.js';
import {
  asSeq,
  type Author,
  type EventLog,
  type MeshState,
  type Projection,
  type ResourceEvent,
  type ResourceStore,
  type Stored,
  type WriteOptions,
  type Write,
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
  /** Told of each failed catch-up (log it); the store keeps its last projection and retries. */
  readonly onError?: (error: StoreUnavailableError) => void;
}

export interface MemoryStoreOptions extends ResourceStoreOptions {
  /** Stamps each event's `at`; default the system clock. */
  readonly now?: () => Date;
}

const DEFAULT_RESYNC_MS = 5_000;
const DEFAULT_PAGE_SIZE = 1_000;

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
  readonly projections: Observable<Projection>;
  #started = false;
  #closed = false;

  constructor(log: EventLog, options: ResourceStoreOptions, ownsLog: boolean) {
    this.#log = log;
    this.#ownsLog = ownsLog;
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
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#feed.stop();
    if (this.#ownsLog) await this.#log.close();
  }

  async put(resource: Valid<Resource>, options: WriteOptions = {}): Promise<Stored<Resource>> {
    this.#assertRunning(`writing ${describeKey(keyOf(resource))}`);
    if (resource.type === 'Dataplane' && !this.projection.meshes.has(resource.mesh)) {
      throw new MeshNotFoundError(resource.mesh, keyOf(resource));
    }
    const events = await this.#log.append([{ kind: 'upserted', resource, expected: options.expected }], this.#authorFor(options));
    await this.#applied(events);
    const [event] = events;
    // A bug in a backend, not an outcome: append resolves with one event per write.
    if (event === undefined) throw new Error(`the event log appended no event for ${describeKey(keyOf(resource))}`);
    return storedOf(resource, event);
  }

  async delete(key: ResourceKey, options: WriteOptions = {}): Promise<void> {
    this.#assertRunning(`deleting ${describeKey(key)}`);
    const { expected } = options;
    if (expected === 'absent') {
      // "Delete only if absent" can never succeed: say why with the error a delete would give.
      const current = this.get(key);
      throw current === undefined ? new NotFoundError(key) : new VersionConflictError(key, 'absent', current.version);
    }
    const writes: Write[] = [];
    if (key.type === 'Mesh') {
      // One atomic batch, dataplanes first: no revision has a Dataplane without its Mesh.
      for (const dataplane of this.projection.meshes.get(key.name)?.dataplanes.values() ?? []) {
        writes.push({ kind: 'deleted', key: keyOf(dataplane.resource) });
      }
    }
    writes.push({ kind: 'deleted', key, expected });
    await this.#applied(await this.#log.append(writes, this.#authorFor(options)));
  }

  get(key: ResourceKey): Stored<Resource> | undefined {
    if (key.type === 'Mesh') return this.projection.meshes.get(key.name)?.mesh;
    return this.projection.meshes.get(key.mesh)?.dataplanes.get(key.name);
  }

  list(type: Resource['type'], mesh?: string): readonly Stored<Resource>[] {
    const { meshes } = this.projection;
    let states: readonly MeshState[];
    if (mesh === undefined) states = byName(meshes);
    else {
      const state = meshes.get(mesh);
      states = state === undefined ? [] : [state];
    }
    return type === 'Mesh' ? states.map((state) => state.mesh) : states.flatMap((state) => byName(state.dataplanes));
  }

  async #createDefaultMesh(): Promise<void> {
    // DESIGN §6: `default` exists on a fresh store. A Mesh is only a name, so this one is valid.
    const mesh = { type: 'Mesh', name: DEFAULT_MESH } as Valid<Mesh>;
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
