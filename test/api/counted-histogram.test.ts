import { AggregatorRegistry, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CountedHistogram } from '../../src/api/counted-histogram.js';

const BOUNDS = [0.5, 1, 2.5, 10];
/** On the bounds, between them, below the first and above the last. */
const VALUES = [0, 0.25, 0.5, 0.75, 1, 1.5, 2.5, 3, 9.99, 10, 10.01, 1e6];

/** The same histogram twice, one in each registry: prom-client's own, and a CountedHistogram. */
function twins(labelled: boolean): { expected: Registry; actual: Registry; observe: (value: number, type: string) => void } {
  const expected = new Registry();
  const actual = new Registry();
  const theirs = new Histogram({ name: 'test_sizes', help: 'Sizes, by type.', buckets: BOUNDS, registers: [expected], ...(labelled && { labelNames: ['type'] }) });
  const ours = new CountedHistogram('test_sizes', 'Sizes, by type.', BOUNDS, [actual]);
  const types = labelled ? ['a', 'b'] : [''];
  const series = new Map(types.map((type) => [type, labelled ? ours.series({ type }) : ours.series()]));
  if (labelled) for (const type of types) theirs.zero({ type });
  return {
    expected,
    actual,
    observe: (value, type) => {
      if (labelled) theirs.observe({ type }, value);
      else theirs.observe(value);
      series.get(labelled ? type : '')!.observe(value);
    },
  };
}

describe('CountedHistogram', () => {
  it.each([true, false])('is scraped as prom-client’s Histogram is, labelled %s: every series at 0 first, then each observation in its bucket', async (labelled) => {
    const { expected, actual, observe } = twins(labelled);
    expect(await actual.metrics()).toBe(await expected.metrics());
    VALUES.forEach((value, at) => observe(value, at % 3 === 0 ? 'b' : 'a'));
    const text = await actual.metrics();
    expect(text).toBe(await expected.metrics());
    expect(text).toContain(labelled ? 'test_sizes_count{type="a"} 8' : 'test_sizes_count 12');
  });

  it('adds up over workers as prom-client’s Histogram does', async () => {
    const workers = [twins(true), twins(true)];
    workers.forEach(({ observe }, worker) => VALUES.forEach((value, at) => observe(value * (worker + 1), at % 2 === 0 ? 'a' : 'b')));
    const theirs = await Promise.all(workers.map(({ expected }) => expected.getMetricsAsJSON()));
    const ours = await Promise.all(workers.map(({ actual }) => actual.getMetricsAsJSON()));
    const total = await AggregatorRegistry.aggregate(ours).metrics();
    expect(total).toBe(await AggregatorRegistry.aggregate(theirs).metrics());
    expect(total).toContain('test_sizes_count{type="b"} 12');
  });

  it('starts every series again at 0 when its registry is reset, each still shown', async () => {
    const used = twins(true);
    for (const value of VALUES) used.observe(value, 'a');
    used.actual.resetMetrics();
    used.observe(2, 'b');
    const fresh = twins(true);
    fresh.observe(2, 'b');
    expect(await used.actual.metrics()).toBe(await fresh.expected.metrics());
  });
});
