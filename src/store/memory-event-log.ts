import { Subject, type Observable } from 'rxjs';
import { keyOf, type ResourceKey } from '../mesh/index.js';
import { NotFoundError, StoreUnavailableError, VersionConflictError } from './errors.js';
import {
  asResourceVersion,
  asSeq,
  type Author,
  type EventLog,
  type ResourceEvent,
  type ResourceVersion,
  type Seq,
  type Write,
} from './types.js';

export interface MemoryEventLogOptions {
  /** Stamps each event's `at`; default the system clock. */
  readonly now?: () => Date;
}

/** What the log knows of one key: its last event's version, and whether that was an upsert. */
interface KeyState {
  readonly version: ResourceVersion;
  readonly live: boolean;
}

/**
 * The event log in memory, for `--store memory` and tests. It obeys the same contract as the
 * Postgres and PGlite logs (test/store/event-log-contract.ts).
 *
 * Versions count a key's events: 1 on create, +1 on each upsert, and a delete records the
 * deleted version + 1. A key re-created after a delete carries on from there instead of
 * restarting at 1, so a version a client read (`If-Match`) never matches a later incarnation.
 */
export class MemoryEventLog implements EventLog {
  readonly #now: () => Date;
  /** `#events[i].seq === i + 1`: memory has no rolled-back transactions, so no gaps. */
  readonly #events: ResourceEvent[] = [];
  readonly #keys = new Map<string, KeyState>();
  readonly #wakeups = new Subject<void>();
  readonly wakeups: Observable<void> = this.#wakeups.asObservable();
  #closed = false;

  constructor(options: MemoryEventLogOptions = {}) {
    this.#now = options.now ?? (() => new Date());
  }

  async append(writes: readonly Write[], author: Author): Promise<readonly ResourceEvent[]> {
    this.#assertOpen(`appending ${writes.length} events`);
    // Check every write before appending any, so a conflict leaves the log untouched. Checks
    // see the batch's earlier writes, as they would inside a database transaction.
    const staged = new Map<string, KeyState>();
    const planned: { readonly write: Write; readonly key: ResourceKey; readonly version: ResourceVersion }[] = [];
    for (const write of writes) {
      const key = write.kind === 'upserted' ? keyOf(write.resource) : { type: write.key.type, mesh: write.key.mesh, name: write.key.name };
      const id = idOf(key);
      const current = staged.get(id) ?? this.#keys.get(id);
      const actual = current?.live === true ? current.version : 'absent';
      if (write.kind === 'deleted' && actual === 'absent') throw new NotFoundError(key);
      if (write.expected !== undefined && write.expected !== actual) throw new VersionConflictError(key, write.expected, actual);
      const version = asResourceVersion((current?.version ?? 0) + 1);
      staged.set(id, { version, live: write.kind === 'upserted' });
      planned.push({ write, key, version });
    }

    const at = this.#now().toISOString();
    const events: ResourceEvent[] = [];
    for (const { write, key, version } of planned) {
      const seq = asSeq(this.#events.length + 1);
      const event: ResourceEvent =
        write.kind === 'upserted'
          ? { seq, key, version, at, by: author, kind: 'upserted', resource: write.resource }
          : { seq, key, version, at, by: author, kind: 'deleted' };
      this.#events.push(event);
      events.push(event);
    }
    for (const [id, state] of staged) this.#keys.set(id, state);
    this.#wakeups.next();
    return events;
  }

  async readAfter(after: Seq, limit: number): Promise<readonly ResourceEvent[]> {
    this.#assertOpen(`reading events after seq ${after}`);
    return this.#events.slice(after, after + limit);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#wakeups.complete();
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw new StoreUnavailableError(operation, { cause: new Error('the event log is closed') });
  }
}

/** NUL separates the parts: Postgres text cannot hold it, so no stored name contains one. */
function idOf(key: ResourceKey): string {
  return `${key.type}\0${key.mesh}\0${key.name}`;
}
