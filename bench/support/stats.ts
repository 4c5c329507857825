/** p50 / p99 / max of durations, nearest-rank. */
export interface Spread {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export function spread(values: ArrayLike<number>): Spread {
  const sorted = Float64Array.from(values).sort();
  const rank = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
  return { p50: rank(0.5), p99: rank(0.99), max: sorted[sorted.length - 1] ?? Number.NaN };
}

/** Each value minus `origin`. */
export function since(origin: number, values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values, (value) => value - origin);
}
