import { sortedIndex } from '../common/index.js';

/** Past this many, sorting everything costs no more than keeping the first ones in order. */
const KEEP_AT_MOST = 256;

/**
 * The first `count` of `items` by `order`, sorted: a page of 20 out of 10,000 sessions without
 * sorting all 10,000 (bench/README.md: the sort was most of `GET /sessions` during a storm).
 * `order` must be total, as a page's position depends on it.
 */
export function firstInOrder<T>(items: readonly T[], count: number, order: (a: T, b: T) => number): T[] {
  if (count >= items.length || count > KEEP_AT_MOST) return [...items].sort(order).slice(0, count);
  const kept: T[] = [];
  if (count <= 0) return kept;
  for (const item of items) {
    if (kept.length === count && order(item, kept[count - 1]!) >= 0) continue;
    kept.splice(sortedIndex(kept, item, order), 0, item);
    if (kept.length > count) kept.pop();
  }
  return kept;
}
