/** A Map, or a WeakMap for what is kept only as long as its key is. */
interface Memo<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): unknown;
}

/** `make()` once per key of `memo`: what many callers share is built by the first. */
export function memoised<K, V>(memo: Memo<K, V>, key: K, make: () => V): V {
  let value = memo.get(key);
  if (value === undefined) {
    value = make();
    memo.set(key, value);
  }
  return value;
}

/**
 * `make()` once per owner and key, kept only as long as the owner is (a mesh state, a plan, an
 * encoded resource): what hangs on an owner of an older revision goes with it.
 */
export function memoisedOn<O extends object, V>(memo: WeakMap<O, Map<string, V>>, owner: O, key: string, make: () => V): V {
  let byKey = memo.get(owner);
  if (byKey === undefined) memo.set(owner, (byKey = new Map()));
  return memoised(byKey, key, make);
}

/** What `memoisedPair` keeps per first value: the second it was last asked with, and the answer. */
export type PairMemo<B extends object, A, V> = WeakMap<B, { readonly after: A; readonly value: V }>;

/**
 * `make()` once per pair `before` → `after`, keeping per `before` only the last `after` asked
 * with: for many callers that move from one shared value to the same next one (every node of a
 * change, from the list it held to the list it is sent), which ask once for all of them.
 */
export function memoisedPair<B extends object, A, V>(memo: PairMemo<B, A, V>, before: B, after: A, make: () => V): V {
  const held = memo.get(before);
  if (held !== undefined && held.after === after) return held.value;
  const value = make();
  memo.set(before, { after, value });
  return value;
}
