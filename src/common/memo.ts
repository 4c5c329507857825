/** `make()` once per key of `memo`: what many callers share is built by the first. */
export function memoised<K, V>(memo: Map<K, V>, key: K, make: () => V): V {
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
