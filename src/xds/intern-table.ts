/**
 * Equal immutable values kept as one object, by a key that says when two are equal: asked for a
 * key whose value still lives, the table returns that object, so the ten thousand nodes that
 * hold an equal value hold one. An entry goes once its value was collected.
 */
export class InternTable<T extends object> {
  readonly #entries = new Map<string, WeakRef<T>>();
  readonly #release = new FinalizationRegistry<string>((key) => {
    if (this.#entries.get(key)?.deref() === undefined) this.#entries.delete(key);
  });

  /** The value kept for `key`, if it still lives. */
  get(key: string): T | undefined {
    return this.#entries.get(key)?.deref();
  }

  /** The value kept for `key`; `value` itself, kept from now on, when none lives. */
  intern(key: string, value: T): T {
    const kept = this.get(key);
    if (kept !== undefined) return kept;
    this.#entries.set(key, new WeakRef(value));
    this.#release.register(value, key);
    return value;
  }
}
