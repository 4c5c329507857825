import { describe, expect, it } from 'vitest';
import type { Statechart } from '../../src/machines/statechart.js';
import { renderStatechart } from '../../src/machines/statechart-formats.js';

type Step = { readonly event: string; readonly from: string; readonly to: string };
// The node page's own module, as the browser loads it (plain JavaScript, served from src/api/ui).
const WALK = '../../src/api/ui/chart-walk.js';
const { takenBy } = (await import(WALK)) as { takenBy: (chart: Statechart, step: Step) => number[] };

/** The transitions a step of a story took, as the node page marks them, by source and targets, in the order taken. */
async function walked(step: Step): Promise<string[]> {
  const chart = JSON.parse(await renderStatechart('json')) as Statechart;
  return takenBy(chart, step).map((index) => {
    const { source, targets } = chart.transitions[index]!;
    return `${source}->${targets.join(',')}`;
  });
}

describe('the path the node page marks for a step of a story (src/api/ui/chart-walk.js)', () => {
  it.each([
    // Served within the step that opened the stream: in, through generating, out on what it raised.
    [{ event: 'stream.opened', from: 'connecting', to: 'serving' }, ['connecting->awaiting-snapshot', 'arriving->generating', 'awaiting-snapshot->serving']],
    // Its Dataplane not there yet: it rests in generating.
    [{ event: 'stream.opened', from: 'connecting', to: 'generating' }, ['connecting->awaiting-snapshot', 'arriving->generating']],
    // Back holding configuration: the store is read first.
    [{ event: 'stream.opened', from: 'disconnected', to: 'catching-up' }, ['disconnected->awaiting-snapshot', 'arriving->catching-up']],
    [{ event: 'stream.opened', from: 'serving', to: 'catching-up' }, ['streaming->awaiting-snapshot', 'arriving->catching-up']],
    [{ event: 'store.caughtUp', from: 'catching-up', to: 'serving' }, ['catching-up->generating', 'awaiting-snapshot->serving']],
    // What it waited for came: generated again, served in the same step.
    [{ event: 'store.advanced', from: 'generating', to: 'serving' }, ['generating->generating', 'awaiting-snapshot->serving']],
    [{ event: 'watchdog.ticked', from: 'generating', to: 'serving' }, ['generating->generating', 'awaiting-snapshot->serving']],
    [{ event: 'certificate.issued', from: 'generating', to: 'serving' }, ['generating->generating', 'awaiting-snapshot->serving']],
    [{ event: 'stream.closed', from: 'serving', to: 'disconnected' }, ['streaming->disconnected']],
    [{ event: 'snapshot.failed', from: 'serving', to: 'evicted' }, ['serving->evicted']],
    [{ event: 'xstate.after.evictionGrace.disconnected', from: 'disconnected', to: 'evicted' }, ['disconnected->evicted']],
  ])('%o takes %o', async (step, expected) => {
    expect(await walked(step)).toEqual(expected);
  });

  it('marks nothing for a step the chart cannot take', async () => {
    expect(await walked({ event: 'snapshot.generated', from: 'connecting', to: 'serving' })).toEqual([]);
  });
});
