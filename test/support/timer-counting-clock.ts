import { SimulatedClock } from 'xstate';

/**
 * A simulated clock that knows which of its timers are pending: set, and neither fired nor
 * cleared. A timer left pending after what armed it is gone keeps its callback, and all the
 * callback reaches, alive (I3).
 */
export class TimerCountingClock extends SimulatedClock {
  readonly #pending = new Map<number, number>();

  override setTimeout(fn: (...args: unknown[]) => void, timeout: number): number {
    const id = super.setTimeout((...args: unknown[]) => {
      this.#pending.delete(id);
      fn(...args);
    }, timeout);
    this.#pending.set(id, timeout);
    return id;
  }

  override clearTimeout(id: number): void {
    this.#pending.delete(id);
    super.clearTimeout(id);
  }

  /** The delay each pending timer was set with, in the order they were set. */
  pendingDelays(): number[] {
    return [...this.#pending.values()];
  }
}
