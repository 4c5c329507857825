/** Connections handed to grpc-js and not answered yet, at most: 256 connects are ~0.1 s of work. */
export const CONNECTING_MAX = 256;

/** ms a connection counts as connecting at most, answered or not (see `ConnectWindow`). */
export const CONNECTING_PATIENCE_MS = 250;

export interface ConnectWindowOptions {
  /** Default CONNECTING_MAX. */
  readonly max?: number;
  /** Default CONNECTING_PATIENCE_MS. */
  readonly patienceMs?: number;
  /** A monotonic clock in ms: `performance.now` by default. */
  readonly now?: () => number;
  /** Calls `wake` after `ms` (an unref'd `setTimeout` by default); returns how to cancel it. */
  readonly after?: (ms: number, wake: () => void) => () => void;
}

/**
 * The connections a server has taken on and not yet answered, by peer (`host:port`, as grpc-js's
 * `getPeer` names it). In a connect storm the listener accepts every connection at once, so the
 * kernel drops none, but hands one to grpc-js only while the window has room: the server then
 * works on a bounded number of connects, the first ones served first, instead of setting up
 * 10,000 HTTP/2 connections and sessions side by side, which held the event loop for a second at
 * a time and left 10–25 % more memory behind (bench/README.md).
 *
 * A connection enters once its client has sent something (a silent one never does: see
 * grpc-listener.ts), and leaves when it is answered (a response or a status on any of its
 * streams), when one of its streams ends, when it closes, or after `patienceMs`, whichever comes
 * first: a client that opens a stream and says no more, or a node the server cannot serve yet
 * (its Dataplane not applied, the store being read), holds its place only that long, so the
 * window never closes for good; at worst it admits `max` connections every `patienceMs`.
 */
export class ConnectWindow {
  readonly #max: number;
  readonly #patienceMs: number;
  /** The window's clock (ms, monotonic); the listener times its turns' admissions with it too. */
  readonly now: () => number;
  readonly #after: (ms: number, wake: () => void) => () => void;
  /** Peer → when it entered, in the order they entered: the oldest first. */
  readonly #connecting = new Map<string, number>();
  /** Those waiting for room: each listener of a server with connections waiting. */
  #waiting: Array<() => void> = [];
  #cancelTimer: (() => void) | undefined;

  constructor(options: ConnectWindowOptions = {}) {
    this.#max = options.max ?? CONNECTING_MAX;
    this.#patienceMs = options.patienceMs ?? CONNECTING_PATIENCE_MS;
    this.now = options.now ?? (() => performance.now());
    this.#after =
      options.after ??
      ((ms, wake) => {
        const timer = setTimeout(wake, ms);
        timer.unref();
        return () => clearTimeout(timer);
      });
  }

  /** Connections in the window now (those past their patience are let go first). */
  get size(): number {
    this.#expire();
    return this.#connecting.size;
  }

  /** Whether another connection may be taken on now. */
  get hasRoom(): boolean {
    return this.size < this.#max;
  }

  /** `peer` was handed to grpc-js. */
  enter(peer: string): void {
    // Entered again (a port reused before its close was seen): it goes to the back, as the newest.
    this.#connecting.delete(peer);
    this.#connecting.set(peer, this.now());
  }

  /** `peer` was answered, one of its streams ended, or it closed: its place is free. */
  leave(peer: string): void {
    if (this.#connecting.delete(peer) && this.#waiting.length > 0 && this.#connecting.size < this.#max) this.#opened();
  }

  /**
   * Calls `wake` once, as soon as the window has room: when a connection leaves, or when the
   * oldest one's patience runs out (at once if it has room now). Each listener waiting is woken.
   */
  whenRoom(wake: () => void): void {
    this.#waiting.push(wake);
    if (this.hasRoom) this.#opened();
    else if (this.#cancelTimer === undefined) this.#timeOldest();
  }

  /** Wakes the waiting when the oldest connection's patience runs out. */
  #timeOldest(): void {
    const oldest = this.#connecting.values().next();
    const dueIn = oldest.done ? 0 : Math.max(0, oldest.value + this.#patienceMs - this.now());
    this.#cancelTimer = this.#after(dueIn, () => {
      this.#cancelTimer = undefined;
      if (this.hasRoom) this.#opened();
      else if (this.#waiting.length > 0) this.#timeOldest();
    });
  }

  #opened(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }

  #expire(): void {
    const oldestAllowed = this.now() - this.#patienceMs;
    for (const [peer, since] of this.#connecting) {
      if (since > oldestAllowed) break;
      this.#connecting.delete(peer);
    }
  }
}
