/** p50 / p90 / p99 / max of durations, nearest-rank. */
export interface Spread {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

export function spread(values: ArrayLike<number>): Spread {
  const sorted = Float64Array.from(values).sort();
  const rank = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
  return { p50: rank(0.5), p90: rank(0.9), p99: rank(0.99), max: sorted[sorted.length - 1] ?? Number.NaN };
}

/**
 * Spearman's rank correlation of two equally long series (ties ranked by position): 1 when
 * `b` is in the same order as `a`, e.g. nodes served in the order they arrived.
 */
export function rankCorrelation(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = a.length;
  if (n !== b.length) throw new Error(`rankCorrelation: series of ${n} and ${b.length} values`);
  if (n < 2) return Number.NaN;
  const ranks = (values: ArrayLike<number>) => {
    const order = Array.from({ length: n }, (_, i) => i).sort((i, j) => values[i]! - values[j]!);
    const rank = new Float64Array(n);
    order.forEach((index, position) => (rank[index] = position));
    return rank;
  };
  const [ra, rb] = [ranks(a), ranks(b)];
  let squares = 0;
  for (let i = 0; i < n; i++) squares += (ra[i]! - rb[i]!) ** 2;
  return 1 - (6 * squares) / (n * (n * n - 1));
}

/** Each value minus `origin`. */
export function since(origin: number, values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values, (value) => value - origin);
}
