/** Where `item` is, or goes, in `sorted` (ordered by `order`): the first place not before it. */
export function sortedIndex<T>(sorted: readonly T[], item: T, order: (a: T, b: T) => number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (order(sorted[middle]!, item) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}
