/** ms of session work per turn of the event loop, and how many items run between looks at the clock. */
const SLICE_MS = 8;
const SLICE_CHECK = 16;

export interface SessionSchedulerOptions {
  /** A monotonic clock in ms for measuring slices: `performance.now` by default. */
  readonly now?: () => number;
  /** Runs `turn` on a later turn of the event loop: `setImmediate` by default; a test may run it by hand. */
  readonly defer?: (turn: () => void) => void;
  /** ms of work per turn; default 8. */
  readonly sliceMs?: number;
}

interface Batch {
  readonly items: readonly unknown[];
  readonly work: (item: unknown) => void;
  next: number;
}

/** How urgent a batch is: `sessions` (requests, a store change, a tick), or `background`, run only while no sessions' work waits. */
export type Lane = 'sessions' | 'background';

/**
 * Runs work over many sessions in slices bounded by time, one batch after another in the order
 * they were scheduled: a store change, a watchdog tick, a storm of finished catch-ups or the
 * session records' views reaching 10,000 sessions never holds the event loop for more than a
 * slice, so pushes, ACKs and the API are served between slices (bench/README.md, ui). Work must
 * not throw: a batch that throws stops the queue.
 *
 * A turn of the event loop gets one slice, however many batches share it: the xDS server hands
 * every request over as a batch of its own, and in a connect storm one turn of the loop reads
 * thousands of them (libuv goes on polling while the kernel has more than 1,024 sockets ready).
 * Once the turn's slice is spent, requests wait for later turns, so timers, new connections and
 * a store change get theirs, and the fleet, not answered yet, sends less (bench/README.md).
 *
 * Background work (the session records' views) runs only while no sessions' work waits, and
 * yields to it between items: a change is never queued behind 10,000 records being built.
 */
export class SessionScheduler {
  readonly #now: () => number;
  readonly #defer: (turn: () => void) => void;
  readonly #sliceMs: number;
  readonly #lanes: Record<Lane, Batch[]> = { sessions: [], background: [] };
  #pending = false;
  /** When this turn's slice is spent; undefined until work runs in the turn. */
  #sliceEnd: number | undefined;

  constructor(options: SessionSchedulerOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#defer = options.defer ?? ((turn) => setImmediate(turn));
    this.#sliceMs = options.sliceMs ?? SLICE_MS;
  }

  /** Whether scheduled work is still waiting or running. */
  get busy(): boolean {
    return this.#waiting() > 0;
  }

  /**
   * Runs `work` for each of `items`, after the batches scheduled before it in its lane, starting
   * now within this turn's slice and going on in later turns.
   */
  schedule<T>(items: readonly T[], work: (item: T) => void, lane: Lane = 'sessions'): void {
    if (items.length === 0) return;
    this.#lanes[lane].push({ items, work: work as (item: unknown) => void, next: 0 });
    if (this.#waiting() === 1 && !this.#pending) this.#run();
  }

  /**
   * Resolves once the work scheduled in `lane` before this call has run (batches of a lane run
   * in the order they were scheduled: this is one more), for a caller that must wait for its own batch.
   */
  settled(lane: Lane = 'sessions'): Promise<void> {
    return new Promise((resolve) => this.schedule([resolve], (done) => done(), lane));
  }

  #waiting(): number {
    return this.#lanes.sessions.length + this.#lanes.background.length;
  }

  #run(): void {
    this.#pending = false;
    const end = this.#slice();
    if (this.#now() >= end) return this.#later();
    const { sessions, background } = this.#lanes;
    let done = 0;
    while (this.#waiting() > 0) {
      const lane = sessions.length > 0 ? sessions : background;
      const batch = lane[0]!;
      while (batch.next < batch.items.length) {
        batch.work(batch.items[batch.next++]);
        if (++done % SLICE_CHECK === 0 && this.#now() >= end) return this.#later();
        // Sessions' work scheduled meanwhile goes first.
        if (lane === background && sessions.length > 0) break;
      }
      if (batch.next === batch.items.length) lane.shift();
      // Batches of one request each: the clock is looked at after every batch too.
      if (this.#waiting() > 0 && this.#now() >= end) return this.#later();
    }
  }

  /** The end of this turn's slice: the turn's first work opens it, and the turn's end closes it. */
  #slice(): number {
    if (this.#sliceEnd === undefined) {
      this.#sliceEnd = this.#now() + this.#sliceMs;
      this.#defer(() => (this.#sliceEnd = undefined));
    }
    return this.#sliceEnd;
  }

  #later(): void {
    this.#pending = true;
    this.#defer(() => this.#run());
  }
}
