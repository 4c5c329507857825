import type { Metric, MetricValueWithName, Registry } from 'prom-client';

type Labels = Readonly<Record<string, string>>;

/** One labelled series of a CountedHistogram: what its observations added up to so far. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative), the last for those above every bound. */
  readonly #counts: number[];
  #sum = 0;
  #count = 0;

  constructor(
    readonly labels: Labels,
    readonly bounds: readonly number[],
  ) {
    this.#counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    const { bounds } = this;
    let bucket = 0;
    while (bucket < bounds.length && value > bounds[bucket]!) bucket++;
    this.#counts[bucket]!++;
    this.#sum += value;
    this.#count++;
  }

  reset(): void {
    this.#counts.fill(0);
    this.#sum = 0;
    this.#count = 0;
  }

  /** The series as prom-client's Histogram shows one: cumulative buckets, `+Inf`, sum, count. */
  values(name: string): MetricValueWithName<string>[] {
    const values: MetricValueWithName<string>[] = [];
    let below = 0;
    this.bounds.forEach((bound, bucket) => {
      below += this.#counts[bucket]!;
      values.push({ value: below, metricName: `${name}_bucket`, labels: { le: bound, ...this.labels } });
    });
    values.push({ value: this.#count, metricName: `${name}_bucket`, labels: { le: '+Inf', ...this.labels } });
    values.push({ value: this.#sum, metricName: `${name}_sum`, labels: { ...this.labels } });
    values.push({ value: this.#count, metricName: `${name}_count`, labels: { ...this.labels } });
    return values;
  }
}

/**
 * A Prometheus histogram counted as plain numbers and handed to prom-client's registry when
 * scraped, as the counters beside it are: prom-client's own `observe` checks and hashes the
 * labels of every observation, bound series' too (~1.5 µs each, and a change observes two a
 * node: bench/README.md). It is exposed as prom-client's Histogram would be, in the text
 * format and in the JSON that `chancery run --workers` adds up (test/api/counted-histogram.test.ts).
 */
export class CountedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #series: HistogramSeries[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    readonly bounds: readonly number[],
    registers: readonly Registry[],
  ) {
    // prom-client's registry takes any metric with these members; its type names only its own classes.
    for (const registry of registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The series of `labels`, shown from now on, at 0 until its first observation. */
  series(labels: Labels = {}): HistogramSeries {
    const series = new HistogramSeries(labels, this.bounds);
    this.#series.push(series);
    return series;
  }

  /** What a scrape reads: plain data, which a worker hands its primary as JSON. */
  async get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: MetricValueWithName<string>[] }> {
    const { name, help, type, aggregator } = this;
    return { name, help, type, aggregator, values: this.#series.flatMap((series) => series.values(name)) };
  }

  /** Every series back to 0 (`Registry.resetMetrics`); unlike prom-client's, each is still shown. */
  reset(): void {
    for (const series of this.#series) series.reset();
  }
}
