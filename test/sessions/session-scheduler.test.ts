import { describe, expect, it } from 'vitest';
import { SessionScheduler } from '../../src/sessions/index.js';

/** A scheduler on a hand-driven clock whose later turns run only when the test says. */
function handDriven(sliceMs = 8) {
  let now = 0;
  const turns: Array<() => void> = [];
  const scheduler = new SessionScheduler({ now: () => now, defer: (turn) => turns.push(turn), sliceMs });
  return {
    scheduler,
    /** Each item of work takes this long on the clock. */
    cost: (ms: number) => () => (now += ms),
    /** Runs the next deferred turn; false when none is waiting. */
    turn: () => {
      const next = turns.shift();
      next?.();
      return next !== undefined;
    },
    get waiting() {
      return turns.length;
    },
  };
}

describe('the session scheduler', () => {
  it('does cheap work at once, within the turn it was scheduled in', () => {
    const { scheduler, waiting } = handDriven();
    const done: number[] = [];
    scheduler.schedule([1, 2, 3], (n) => done.push(n));
    expect(done).toEqual([1, 2, 3]);
    expect(scheduler.busy).toBe(false);
    expect(waiting).toBe(0);
  });

  it('stops a turn once its slice of time is spent, and goes on in the next, in order', () => {
    const driven = handDriven(8);
    const done: number[] = [];
    const items = Array.from({ length: 100 }, (_, i) => i);
    const tick = driven.cost(1);
    driven.scheduler.schedule(items, (n) => {
      done.push(n);
      tick();
    });
    // The clock is looked at every 16 items: 16 items of 1 ms pass the 8 ms slice.
    expect(done).toHaveLength(16);
    expect(driven.scheduler.busy).toBe(true);
    let turns = 0;
    while (driven.turn()) turns++;
    expect(done).toEqual(items);
    expect(turns).toBe(6);
    expect(driven.scheduler.busy).toBe(false);
  });

  it('runs batches one after another in the order they were scheduled, a batch scheduled from work included', () => {
    const driven = handDriven(8);
    const done: string[] = [];
    const tick = driven.cost(1);
    driven.scheduler.schedule(Array.from({ length: 20 }, (_, i) => `a${i}`), (name) => {
      done.push(name);
      tick();
      if (name === 'a0') driven.scheduler.schedule(['c'], (c) => done.push(c));
    });
    driven.scheduler.schedule(['b'], (b) => done.push(b));
    while (driven.turn());
    expect(done).toEqual([...Array.from({ length: 20 }, (_, i) => `a${i}`), 'c', 'b']);
  });

  it('says when the work scheduled before it has run, not before, for a caller that waits for its own batch', async () => {
    const driven = handDriven(8);
    const done: number[] = [];
    const tick = driven.cost(1);
    driven.scheduler.schedule(Array.from({ length: 40 }, (_, i) => i), (n) => {
      done.push(n);
      tick();
    });
    let settled = false;
    const waiting = driven.scheduler.settled().then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    while (driven.turn());
    await waiting;
    expect(done).toHaveLength(40);
    // With nothing scheduled, at once.
    await driven.scheduler.settled();
    expect(driven.scheduler.busy).toBe(false);
  });

  it('ignores an empty batch', () => {
    const { scheduler, waiting } = handDriven();
    scheduler.schedule([], () => {
      throw new Error('no work for an empty batch');
    });
    expect(scheduler.busy).toBe(false);
    expect(waiting).toBe(0);
  });
});
