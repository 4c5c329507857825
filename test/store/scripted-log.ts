import { NEVER, Subject, type Observable } from 'rxjs';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import type { Resource, ResourceKey } from '../../src/mesh/resources.js';
import type { Author, Checkpoint, EventLog, KeyHistory, ResourceEvent, Seq, Stored, Write } from '../../src/store/types.js';

/**
 * A MemoryEventLog whose reads a test controls: they can fail, be held after the query has
 * run (as a slow network answer would be), and lose their wake-ups. It counts reads in flight.
 */
export class ScriptedLog implements EventLog {
  readonly inner: MemoryEventLog;
  readonly wakeups: Observable<void>;
  /** Emits the `after` of each read as it starts. */
  readonly readStarted = new Subject<Seq>();
  /** When set, reads reject with it. */
  failure: Error | undefined;
  reads = 0;
  checkpointReads = 0;
  maxConcurrentReads = 0;
  #inFlight = 0;
  #hold: Promise<void> | undefined;

  constructor(options: { readonly inner?: MemoryEventLog; readonly loseWakeups?: boolean } = {}) {
    this.inner = options.inner ?? new MemoryEventLog();
    this.wakeups = options.loseWakeups === true ? NEVER : this.inner.wakeups;
  }

  get sessionRecords(): EventLog['sessionRecords'] {
    return this.inner.sessionRecords;
  }

  /** Holds every read's answer until the returned function is called. */
  hold(): () => void {
    let release!: () => void;
    this.#hold = new Promise((resolve) => (release = resolve));
    return () => {
      this.#hold = undefined;
      release();
    };
  }

  append(writes: readonly Write[], author: Author): Promise<readonly ResourceEvent[]> {
    return this.inner.append(writes, author);
  }

  async readAfter(after: Seq, limit: number): Promise<readonly ResourceEvent[]> {
    this.reads += 1;
    this.#inFlight += 1;
    this.maxConcurrentReads = Math.max(this.maxConcurrentReads, this.#inFlight);
    try {
      this.readStarted.next(after);
      const failure = this.failure;
      const events = await this.inner.readAfter(after, limit);
      await this.#hold;
      if (failure !== undefined) throw failure;
      return events;
    } finally {
      this.#inFlight -= 1;
    }
  }

  readKey(key: ResourceKey, after: Seq, limit: number): Promise<KeyHistory> {
    return this.inner.readKey(key, after, limit);
  }

  readAt(key: ResourceKey, revision: Seq): Promise<Stored<Resource> | undefined> {
    return this.inner.readAt(key, revision);
  }

  readCheckpoint(): Promise<Checkpoint> {
    this.checkpointReads += 1;
    return this.inner.readCheckpoint();
  }

  writeCheckpoint(checkpoint: Checkpoint, author: Author): Promise<Seq> {
    return this.inner.writeCheckpoint(checkpoint, author);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
