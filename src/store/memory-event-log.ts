import { Subject, type Observable } from 'rxjs';
import { StoreUnavailableError } from './errors.js';
import { asSeq, type Author, type EventLog, type ResourceEvent, type Seq, type Write } from './types.js';
import { planWrites, type KeyState } from './write-plan.js';

export interface MemoryEventLogOptions {
  /** Stamps each event's `at`; default the system clock. */
  readonly now?: () => Date;
}

/**
 * The event log in memory, for `--store memory` and tests. It obeys the same contract as the
 * Postgres and PGlite logs (test/store/event-log-contract.ts), and numbers versions with the
 * same `planWrites`.
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
    // Every write is checked before any is appended, so a conflict leaves the log untouched.
    const plan = planWrites(writes, (id) => this.#keys.get(id));
    const at = this.#now().toISOString();
    const events: ResourceEvent[] = [];
    for (const { write, key, version } of plan.events) {
      const seq = asSeq(this.#events.length + 1);
      const event: ResourceEvent =
        write.kind === 'upserted'
          ? { seq, key, version, at, by: author, kind: 'upserted', resource: write.resource }
          : { seq, key, version, at, by: author, kind: 'deleted' };
      this.#events.push(event);
      events.push(event);
    }
    for (const [id, { version, live }] of plan.heads) this.#keys.set(id, { version, live });
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

