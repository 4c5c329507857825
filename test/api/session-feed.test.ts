import { describe, expect, it } from 'vitest';
import { RESYNC_EVENT, SessionFeed } from '../../src/api/session-feed.js';
import type { SessionView } from '../../src/machines/session-view.js';
import { sessionView } from './api-harness.js';

/** A feed over a hand-driven watch and schedule: each scheduled flush waits for the test. */
function feedWith(views: readonly SessionView[]) {
  let listener: ((node: string, view?: SessionView) => void) | undefined;
  const scheduled: Array<{ readonly ms: number; readonly flush: () => void }> = [];
  const feed = new SessionFeed(
    {
      watch: (listen) => {
        listener = listen;
        return () => (listener = undefined);
      },
      get: (node) => views.find((view) => view.node === node),
    },
    { interval: 300, maxBatch: 2, resyncInterval: 2_000, schedule: (flush, ms) => (scheduled.push({ ms, flush }), () => {}) },
  );
  const events: string[] = [];
  feed.add({ send: (event) => events.push(event), end: () => {} });
  return { touch: (node: string) => listener!(node), publish: (view: SessionView) => listener!(view.node, view), scheduled, events };
}

describe('SessionFeed', () => {
  it('waits longer after a resync, so a busy fleet does not have every page refetch at every interval', () => {
    const views = ['a', 'b', 'c'].map((name) => sessionView(`default.${name}`, 'serving'));
    const { touch, scheduled, events } = feedWith(views);

    for (const view of views) touch(view.node);
    expect(scheduled.map(({ ms }) => ms)).toEqual([300]);
    scheduled[0]!.flush();
    expect(events).toEqual([RESYNC_EVENT]);

    touch('default.a');
    expect(scheduled.map(({ ms }) => ms)).toEqual([300, 2_000]);
    scheduled[1]!.flush();
    expect(events[1]).toMatch(/^event: sessions\n/);

    touch('default.b');
    expect(scheduled.map(({ ms }) => ms)).toEqual([300, 2_000, 300]);
  });

  it('sends the live view when a push or an ACK follows a state change in the same batch, and a kept view when none does', () => {
    const live = [sessionView('default.a', 'serving', { revision: 2 })];
    const { touch, publish, scheduled, events } = feedWith(live);

    publish(sessionView('default.a', 'serving', { revision: 1 }));
    touch('default.a');
    scheduled[0]!.flush();
    expect(events[0]).toContain('"revision":2');

    // Evicted: the registry has no view any more, so the one given with the change is sent.
    publish(sessionView('default.gone', 'evicted'));
    scheduled[1]!.flush();
    expect(events[1]).toContain('"node":"default.gone","state":"evicted"');
  });
});
