import type { TransitionRecord } from '../machines/index.js';

/** A bounded record of a session's recent transitions, oldest first. */
export class TransitionRing {
  readonly #items: TransitionRecord[] = [];

  constructor(readonly capacity: number) {}

  push(record: TransitionRecord): void {
    if (this.#items.length === this.capacity) this.#items.shift();
    this.#items.push(record);
  }

  toArray(): readonly TransitionRecord[] {
    return [...this.#items];
  }
}
