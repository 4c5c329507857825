import { Subject, type Observable } from 'rxjs';
import { keyOf, type Resource, type ResourceKey } from '../mesh/index.js';
import { RevisionCompactedError, StoreUnavailableError } from './errors.js';
import { storedOf } from './projection.js';
import { MemorySessionRecords } from './session-records.js';
import {
  asSeq,
  type AppendOptions,
  type Author,
  type Checkpoint,
  type EventLog,
  type KeyHistory,
  type ResourceEvent,
  type Seq,
  type Stored,
  type Write,
} from './types.js';
import { isMemberOf, keyIdOf, planWrites, type KeyHead } from './write-plan.js';

export interface MemoryEventLogOptions {
  /** Stamps each event's `at`; default the system clock. */
  readonly now?: () => Date;
}

const NO_CHECKPOINT: Checkpoint = { seq: asSeq(0), resources: [] };

/**
 * The event log in memory, for `--store memory` and tests. It obeys the same contract as the
 * Postgres and PGlite logs (test/store/event-log-contract.ts), and numbers versions with the
 * same `planWrites`.
 */
export class MemoryEventLog implements EventLog {
  readonly #now: () => Date;
  /** `#events[i].seq === #checkpoint.seq + i + 1`: memory has no rolled-back transactions, so no gaps. */
  #events: ResourceEvent[] = [];
  #checkpoint = NO_CHECKPOINT;
  /** The checkpoint's resources by `keyIdOf`, for `readAt`. */
  #checkpointed = new Map<string, Stored<Resource>>();
  /** Each key's head, by `keyIdOf`; never compacted, so versions carry on. */
  readonly #keys = new Map<string, KeyHead>();
  readonly #wakeups = new Subject<void>();
  readonly wakeups: Observable<void> = this.#wakeups.asObservable();
  readonly sessionRecords: MemorySessionRecords;
  #closed = false;

  constructor(options: MemoryEventLogOptions = {}) {
    this.#now = options.now ?? (() => new Date());
    this.sessionRecords = new MemorySessionRecords(this.#now);
  }

  async append(writes: readonly Write[], author: Author, options: AppendOptions = {}): Promise<readonly ResourceEvent[]> {
    this.#assertOpen(`appending ${writes.length} events`);
    // Every write is checked before any is appended, so a conflict leaves the log untouched.
    const plan = planWrites(writes, { last: asSeq(this.#head()), head: (id) => this.#keys.get(id), liveMembers: (mesh) => this.#liveMembers(mesh) }, options);
    const at = this.#now().toISOString();
    const events: ResourceEvent[] = [];
    const batch = asSeq(this.#head() + 1);
    for (const { write, key, version } of plan.events) {
      const seq = asSeq(this.#head() + 1);
      const event: ResourceEvent =
        write.kind === 'upserted'
          ? { seq, key, version, at, by: author, batch, kind: 'upserted', resource: write.resource }
          : { seq, key, version, at, by: author, batch, kind: 'deleted' };
      this.#events.push(event);
      events.push(event);
    }
    for (const [id, head] of plan.heads) this.#keys.set(id, head);
    if (events.length > 0) this.#wakeups.next();
    return events;
  }

  async readAfter(after: Seq, limit: number): Promise<readonly ResourceEvent[]> {
    this.#assertOpen(`reading events after seq ${after}`);
    const horizon = this.#checkpoint.seq;
    if (after < horizon) throw new RevisionCompactedError(after, horizon);
    return this.#events.slice(after - horizon, after - horizon + limit);
  }

  async readKey(key: ResourceKey, after: Seq, limit: number): Promise<KeyHistory> {
    this.#assertOpen(`reading the history of ${key.type} ${key.name}`);
    const id = keyIdOf(key);
    const events: ResourceEvent[] = [];
    for (const event of this.#events) {
      if (events.length >= limit) break;
      if (event.seq > after && keyIdOf(event.key) === id) events.push(event);
    }
    return { horizon: this.#checkpoint.seq, events };
  }

  async readAt(key: ResourceKey, revision: Seq): Promise<Stored<Resource> | undefined> {
    this.#assertOpen(`reading ${key.type} ${key.name} at revision ${revision}`);
    const horizon = this.#checkpoint.seq;
    if (revision < horizon) throw new RevisionCompactedError(revision, horizon);
    const id = keyIdOf(key);
    for (let i = Math.min(revision - horizon, this.#events.length) - 1; i >= 0; i -= 1) {
      const event = this.#events[i]!;
      if (keyIdOf(event.key) !== id) continue;
      return event.kind === 'upserted' ? storedOf(event.resource, event) : undefined;
    }
    return this.#checkpointed.get(id);
  }

  async readCheckpoint(): Promise<Checkpoint> {
    this.#assertOpen('reading the checkpoint');
    return this.#checkpoint;
  }

  async writeCheckpoint(checkpoint: Checkpoint, _author: Author): Promise<Seq> {
    this.#assertOpen(`writing a checkpoint at seq ${checkpoint.seq}`);
    const horizon = this.#checkpoint.seq;
    if (checkpoint.seq <= horizon) return horizon;
    if (checkpoint.seq > this.#head()) throw new Error(`checkpoint at seq ${checkpoint.seq} is past the end of the log (${this.#head()})`);
    this.#events = this.#events.slice(checkpoint.seq - horizon);
    this.#checkpoint = { seq: checkpoint.seq, resources: [...checkpoint.resources] };
    this.#checkpointed = new Map(checkpoint.resources.map((stored) => [keyIdOf(keyOf(stored.resource)), stored]));
    return checkpoint.seq;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#wakeups.complete();
  }

  *#liveMembers(mesh: string): Iterable<KeyHead> {
    for (const head of this.#keys.values()) {
      if (head.live && isMemberOf(head.key, mesh)) yield head;
    }
  }

  #head(): number {
    return this.#checkpoint.seq + this.#events.length;
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw new StoreUnavailableError(operation, { cause: new Error('the event log is closed') });
  }
}
