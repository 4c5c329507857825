import { Fifo } from '../common/index.js';

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
  /** `now()` when it was scheduled. */
  readonly at: number;
  next: number;
}

/**
 * How urgent a batch is, most urgent first: `fan-out` (a store change, a tick or catch-ups
 * reaching sessions), `requests` (what the xDS server reports, one batch each), `background`
 * (the session records' views), `idle` (work that only saves later work: dataplanes'
 * configuration generated ahead of their nodes).
 */
export type Lane = 'fan-out' | 'requests' | 'background' | 'idle';

const LANES: readonly Lane[] = ['fan-out', 'requests', 'background', 'idle'];

/**
 * ms a background batch waits at most behind requests: in a storm requests never run out, and
 * the session records (which carry the instance's heartbeat) must still be saved well within
 * the instance ttl.
 */
const BACKGROUND_MAX_WAIT_MS = 1_000;

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
 * Lanes order the batches: a lane's batches run only while no more urgent lane has work, and
 * yield to it between items. A store change reaches the nodes already served before the
 * requests of a storm still waiting their turn, and is never queued behind 10,000 records being
 * built; within a lane, batches run in the order they were scheduled. A background batch that
 * has waited BACKGROUND_MAX_WAIT_MS goes before requests (never before a fan-out), so a storm
 * cannot starve it. An idle batch never goes before anything: a storm does wait for it.
 */
export class SessionScheduler {
  readonly #now: () => number;
  readonly #defer: (turn: () => void) => void;
  readonly #sliceMs: number;
  readonly #lanes: Record<Lane, Fifo<Batch>> = { 'fan-out': new Fifo<Batch>(), requests: new Fifo<Batch>(), background: new Fifo<Batch>(), idle: new Fifo<Batch>() };
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
    return this.#next() !== undefined;
  }

  /**
   * Runs `work` for each of `items`, after the batches scheduled before it in its lane, starting
   * now within this turn's slice and going on in later turns.
   */
  schedule<T>(items: readonly T[], work: (item: T) => void, lane: Lane): void {
    if (items.length === 0) return;
    this.#lanes[lane].push({ items, work: work as (item: unknown) => void, at: this.#now(), next: 0 });
    if (this.#waiting() === 1 && !this.#pending) this.#run();
  }

  /**
   * Resolves once the work scheduled in `lane` before this call has run (batches of a lane run
   * in the order they were scheduled: this is one more), for a caller that must wait for its own batch.
   */
  settled(lane: Lane): Promise<void> {
    return new Promise((resolve) => this.schedule([resolve], (done) => done(), lane));
  }

  #waiting(): number {
    let waiting = 0;
    for (const lane of LANES) waiting += this.#lanes[lane].length;
    return waiting;
  }

  /** The most urgent lane with work; undefined when none has. */
  #next(): Fifo<Batch> | undefined {
    const { 'fan-out': fanOut, requests, background, idle } = this.#lanes;
    if (fanOut.length > 0) return fanOut;
    if (background.length > 0 && (requests.length === 0 || this.#now() - background.first!.at >= BACKGROUND_MAX_WAIT_MS)) return background;
    if (requests.length > 0) return requests;
    if (idle.length > 0) return idle;
    return undefined;
  }

  #run(): void {
    this.#pending = false;
    const end = this.#slice();
    if (this.#now() >= end) return this.#later();
    let done = 0;
    for (let lane = this.#next(); lane !== undefined; lane = this.#next()) {
      const batch = lane.first!;
      while (batch.next < batch.items.length) {
        batch.work(batch.items[batch.next++]);
        if (++done % SLICE_CHECK === 0 && this.#now() >= end) return this.#later();
        // Work of a more urgent lane scheduled meanwhile goes first.
        if (lane !== this.#lanes['fan-out'] && this.#next() !== lane) break;
      }
      if (batch.next === batch.items.length) lane.shift();
      // Batches of one request each: the clock is looked at after every batch too.
      if (this.#next() !== undefined && this.#now() >= end) return this.#later();
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
