import { filter, firstValueFrom, merge, Observable, ReplaySubject, type Subscription } from 'rxjs';
import { RevisionCompactedError, StoreUnavailableError } from './errors.js';
import { applyEvents, emptyProjection, projectionOf } from './projection.js';
import type { EventLog, Projection, ResourceEvent, Seq, StoreSizes } from './types.js';

export interface ChangeFeedOptions {
  /** The periodic resync: each value triggers a catch-up, covering lost wake-ups (I7). */
  readonly resync: Observable<unknown>;
  /** Events per `readAfter`. */
  readonly pageSize: number;
  /** Told of each failed catch-up; the feed retries on the next wake-up or resync. */
  readonly onError?: ((error: StoreUnavailableError) => void) | undefined;
}

/**
 * Follows an event log and folds it into projections (I7): a wake-up or a resync only starts
 * a catch-up, and `readAfter(revision)` is the truth. Catch-ups never overlap; triggers that
 * arrive during one coalesce into one more, so an event committed mid-read is not missed.
 *
 * A catch-up reads to the end of the log before emitting, so no consumer sees a half-read
 * log; one that fails emits nothing and keeps the last projection, because an outage must
 * never look like "no resources" (an empty configuration, I1).
 */
export class ChangeFeed {
  readonly #log: EventLog;
  readonly #triggers: Observable<unknown>;
  readonly #pageSize: number;
  readonly #onError: ((error: StoreUnavailableError) => void) | undefined;
  /** Replays the latest projection; emits nothing before the log has an event. */
  readonly #emitted = new ReplaySubject<Projection>(1);
  /** Subscribers to `projections`, counted for `sizes()`. */
  #listeners = 0;
  readonly projections: Observable<Projection> = new Observable<Projection>((subscriber) => {
    this.#listeners += 1;
    const inner = this.#emitted.subscribe(subscriber);
    return () => {
      this.#listeners -= 1;
      inner.unsubscribe();
    };
  });
  #projection = emptyProjection();
  #subscription: Subscription | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  /** Read rounds started and finished: `refresh` waits for the first round that starts after it is called. */
  #roundsStarted = 0;
  #roundsFinished = 0;
  readonly #refreshes: Array<{ readonly round: number; readonly done: () => void }> = [];
  #stopped = false;
  #failure: StoreUnavailableError | undefined;

  constructor(log: EventLog, options: ChangeFeedOptions) {
    this.#log = log;
    this.#triggers = merge(log.wakeups, options.resync);
    this.#pageSize = options.pageSize;
    this.#onError = options.onError;
  }

  /** The latest projection read (revision 0 until the first catch-up). */
  get projection(): Projection {
    return this.#projection;
  }

  /** Why the last catch-up failed; undefined once one succeeds (the store is not ready meanwhile). */
  get failure(): StoreUnavailableError | undefined {
    return this.#failure;
  }

  /**
   * For tests and diagnostics: subscribers to `projections` (those waiting in `applied` too),
   * and callers of `refresh` waiting for a read. Neither grows with the sessions served (I3).
   */
  sizes(): StoreSizes {
    return { listeners: this.#listeners, refreshes: this.#refreshes.length };
  }

  /** Follows the log, and resolves once caught up; rejects (and stops) if that first read fails. */
  async start(): Promise<void> {
    // Subscribe before the first read: a wake-up during it coalesces into another catch-up.
    this.#subscription = this.#triggers.subscribe(() => this.catchUp());
    this.catchUp();
    await this.#running;
    if (this.#failure !== undefined) {
      const failure = this.#failure;
      await this.stop();
      throw failure;
    }
  }

  /** Asks for a catch-up: starts one, or queues one more if one is running. */
  catchUp(): void {
    if (this.#stopped) return;
    if (this.#running === undefined) this.#running = this.#drain();
    else this.#again = true;
  }

  /**
   * Catches up now and resolves with the projection after it, for a reader that must know
   * the log's end; rejects with the failure when the log cannot be read.
   */
  async refresh(): Promise<Projection> {
    // A catch-up already running takes this request as one more round; otherwise the round
    // this call starts is the one. Either way only that round is awaited, not every round
    // later arrivals add: during a reconnect storm each caller waits for one read, not for
    // the storm to end (bench/README.md, failover).
    const round = this.#roundsStarted + 1;
    this.catchUp();
    if (!this.#stopped && this.#roundsFinished < round) await new Promise<void>((done) => this.#refreshes.push({ round, done }));
    if (this.#failure !== undefined) throw this.#failure;
    return this.#projection;
  }

  /** Resolves once the projection includes `seq`; rejects if the feed stops first. */
  async applied(seq: Seq): Promise<Projection> {
    if (this.#projection.revision >= seq) return this.#projection;
    try {
      return await firstValueFrom(this.projections.pipe(filter((projection) => projection.revision >= seq)));
    } catch (error) {
      throw new StoreUnavailableError(`waiting for seq ${seq}: the store closed first`, { cause: error });
    }
  }

  /** Stops following, waits for a running catch-up, and completes `projections`. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#subscription?.unsubscribe();
    await this.#running;
    this.#finishRefreshes(Number.POSITIVE_INFINITY);
    this.#emitted.complete();
  }

  async #drain(): Promise<void> {
    try {
      do {
        this.#again = false;
        const round = ++this.#roundsStarted;
        await this.#readToEnd();
        this.#roundsFinished = round;
        this.#finishRefreshes(round);
      } while (this.#again && !this.#stopped);
    } finally {
      this.#running = undefined;
    }
  }

  #finishRefreshes(round: number): void {
    for (let i = this.#refreshes.length - 1; i >= 0; i--) {
      const refresh = this.#refreshes[i]!;
      if (refresh.round > round) continue;
      this.#refreshes.splice(i, 1);
      refresh.done();
    }
  }

  async #readToEnd(): Promise<void> {
    let next = this.#projection;
    try {
      for (;;) {
        let events: readonly ResourceEvent[];
        try {
          events = await this.#log.readAfter(next.revision, this.#pageSize);
        } catch (error) {
          if (!(error instanceof RevisionCompactedError)) throw error;
          // Retention folded events this feed had not read into a checkpoint (on start, or
          // while it lagged): start from the checkpoint, which is the fold of those events.
          next = await this.#fromCheckpoint(next);
          continue;
        }
        next = applyEvents(next, events);
        if (events.length < this.#pageSize) break;
      }
    } catch (error) {
      this.#failure =
        error instanceof StoreUnavailableError
          ? error
          : new StoreUnavailableError(`reading events after seq ${next.revision}`, { cause: error });
      this.#onError?.(this.#failure);
      return;
    }
    this.#failure = undefined;
    if (this.#stopped || next.revision <= this.#projection.revision) return;
    this.#projection = next;
    this.#emitted.next(next);
  }

  async #fromCheckpoint(current: Projection): Promise<Projection> {
    const checkpoint = await this.#log.readCheckpoint();
    // readAfter refused `current.revision` as older than the checkpoint, and checkpoints only move on.
    if (checkpoint.seq <= current.revision) {
      throw new Error(`the log refused seq ${current.revision} as compacted, but its checkpoint is at ${checkpoint.seq}`);
    }
    return projectionOf(checkpoint);
  }
}
