import { describe, expect, it } from 'vitest';
import { SessionScheduler } from '../../src/sessions/index.js';

/**
 * A scheduler on a hand-driven clock whose later turns run only when the test says. Like
 * `setImmediate`, what is deferred during a turn runs in the next one.
 */
function handDriven(sliceMs = 8) {
  let now = 0;
  const clock = () => now;
  let deferred: Array<() => void> = [];
  const scheduler = new SessionScheduler({ now: () => now, defer: (turn) => deferred.push(turn), sliceMs });
  return {
    scheduler,
    /** Each item of work takes this long on the clock. */
    cost: (ms: number) => () => (now += ms),
    now: clock,
    /** Ends this turn and runs the next; false when nothing was deferred to it. */
    turn: () => {
      const next = deferred;
      deferred = [];
      for (const run of next) run();
      return next.length > 0;
    },
  };
}

/** Requests of 3 ms each, one batch each as the xDS server hands them over, recorded in `done` as they run. */
function requestsOf(driven: ReturnType<typeof handDriven>, done: string[]) {
  let sent = 0;
  const request = (name: string) => {
    done.push(name);
    driven.cost(3)();
  };
  return {
    more: (count: number) => {
      for (let i = 0; i < count; i++) driven.scheduler.schedule([`request-${sent++}`], request, 'requests');
    },
    get sent() {
      return sent;
    },
  };
}

describe('the session scheduler', () => {
  it('does cheap work at once, within the turn it was scheduled in', () => {
    const { scheduler } = handDriven();
    const done: number[] = [];
    scheduler.schedule([1, 2, 3], (n) => done.push(n), 'requests');
    expect(done).toEqual([1, 2, 3]);
    expect(scheduler.busy).toBe(false);
  });

  it('stops a turn once its slice of time is spent, and goes on in the next, in order', () => {
    const driven = handDriven(8);
    const done: number[] = [];
    const items = Array.from({ length: 100 }, (_, i) => i);
    const tick = driven.cost(1);
    driven.scheduler.schedule(
      items,
      (n) => {
        done.push(n);
        tick();
      },
      'requests',
    );
    // The clock is looked at every 16 items: 16 items of 1 ms pass the 8 ms slice.
    expect(done).toHaveLength(16);
    expect(driven.scheduler.busy).toBe(true);
    const doneAfterEachTurn: number[] = [];
    while (driven.turn()) doneAfterEachTurn.push(done.length);
    expect(doneAfterEachTurn).toEqual([32, 48, 64, 80, 96, 100, 100]);
    expect(done).toEqual(items);
    expect(driven.scheduler.busy).toBe(false);
  });

  it('shares one slice among the batches of a turn: once it is spent, work scheduled one item at a time waits for the next turn, in order', () => {
    const driven = handDriven(8);
    const done: number[] = [];
    const work = (n: number) => {
      done.push(n);
      driven.cost(3)();
    };
    // As the xDS server hands over requests, each a batch of its own, in one turn of the loop.
    for (let n = 0; n < 10; n++) driven.scheduler.schedule([n], work, 'requests');
    expect(done).toEqual([0, 1, 2]);
    expect(driven.scheduler.busy).toBe(true);
    driven.turn();
    expect(done).toEqual([0, 1, 2, 3, 4, 5]);
    while (driven.turn());
    expect(done).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // A turn that has spent nothing yet does its work at once again.
    driven.scheduler.schedule([10], work, 'requests');
    expect(done.at(-1)).toBe(10);
  });

  it('lets a store change reaching every session go before the requests still waiting their turn', () => {
    const driven = handDriven(8);
    const done: string[] = [];
    const request = (name: string) => {
      done.push(name);
      driven.cost(3)();
    };
    for (let n = 0; n < 6; n++) driven.scheduler.schedule([`request-${n}`], request, 'requests');
    expect(done).toEqual(['request-0', 'request-1', 'request-2']);
    driven.scheduler.schedule(['session-a', 'session-b'], (name) => done.push(name), 'fan-out');
    while (driven.turn());
    expect(done).toEqual(['request-0', 'request-1', 'request-2', 'session-a', 'session-b', 'request-3', 'request-4', 'request-5']);
  });

  it('runs background work only while no other work waits, and lets a store change scheduled meanwhile go first', () => {
    const driven = handDriven(8);
    const done: string[] = [];
    const tick = driven.cost(1);
    driven.scheduler.schedule(['request'], (name) => done.push(name), 'requests');
    // The records of 40 sessions, behind the request, then a store change while they are built.
    driven.scheduler.schedule(
      Array.from({ length: 40 }, (_, i) => `record-${i}`),
      (name) => {
        done.push(name);
        tick();
        if (name === 'record-20') driven.scheduler.schedule(['change-a', 'change-b'], (change) => done.push(change), 'fan-out');
      },
      'background',
    );
    while (driven.turn());
    const at = (name: string) => done.indexOf(name);
    expect(done).toHaveLength(43);
    expect(at('request')).toBe(0);
    // The change went before every record not yet built when it was scheduled.
    expect(at('change-a')).toBe(at('record-20') + 1);
    expect(at('change-b')).toBe(at('record-20') + 2);
    expect(done.slice(at('change-b') + 1)).toEqual(Array.from({ length: 19 }, (_, i) => `record-${i + 21}`));
  });

  it('runs a background batch before newer requests once it has waited a second, so a storm cannot starve the records', () => {
    const driven = handDriven(8);
    const done: string[] = [];
    let recordedAt: number | undefined;
    const storm = requestsOf(driven, done);
    const more = storm.more;
    more(4);
    driven.scheduler.schedule(['record'], () => (recordedAt = driven.now()), 'background');
    // A storm: every turn brings more requests than a slice can answer.
    for (let turn = 0; turn < 400 && recordedAt === undefined; turn++) {
      more(4);
      driven.turn();
    }
    expect(recordedAt).toBeGreaterThanOrEqual(1_000);
    expect(recordedAt).toBeLessThan(1_100);
    expect(driven.scheduler.busy).toBe(true);
    expect(done.length).toBeLessThan(storm.sent);
  });

  it('runs idle work after everything else, yields to any other work between items, and never goes before a storm however long it waited', () => {
    const driven = handDriven(8);
    const done: string[] = [];
    const storm = requestsOf(driven, done);
    const more = storm.more;
    // A storm is on: more requests wait than a slice can answer.
    more(8);
    driven.scheduler.schedule(
      Array.from({ length: 30 }, (_, i) => `ahead-${i}`),
      (name) => {
        done.push(name);
        driven.cost(1)();
        if (name === 'ahead-10') {
          driven.scheduler.schedule(['record'], (record) => done.push(record), 'background');
          driven.scheduler.schedule(['change'], (change) => done.push(change), 'fan-out');
          more(1);
        }
      },
      'idle',
    );
    driven.scheduler.schedule(['record-first'], (record) => done.push(record), 'background');
    // A storm for two seconds of the clock: no idle work runs while requests wait.
    for (let turn = 0; turn < 300 && driven.now() < 2_000; turn++) {
      more(4);
      driven.turn();
    }
    expect(done.filter((name) => name.startsWith('ahead-'))).toEqual([]);
    expect(done).toContain('record-first');
    // The storm ends: the idle work runs, and what is scheduled meanwhile goes first.
    while (driven.turn());
    const at = (name: string) => done.indexOf(name);
    const ahead = done.filter((name) => name.startsWith('ahead-'));
    expect(ahead).toEqual(Array.from({ length: 30 }, (_, i) => `ahead-${i}`));
    expect(at('ahead-0')).toBeGreaterThan(at(`request-${storm.sent - 2}`));
    expect(done.slice(at('ahead-10') + 1, at('ahead-10') + 4)).toEqual(['change', `request-${storm.sent - 1}`, 'record']);
    expect(at('ahead-11')).toBe(at('ahead-10') + 4);
    expect(driven.scheduler.busy).toBe(false);
  });

  it('settles a lane once the work scheduled in it before has run, background after the requests', async () => {
    const driven = handDriven(8);
    const done: string[] = [];
    const tick = driven.cost(1);
    driven.scheduler.schedule(Array.from({ length: 20 }, (_, i) => `record-${i}`), (name) => (done.push(name), tick()), 'background');
    const recorded = driven.scheduler.settled('background').then(() => done.push('recorded'));
    driven.scheduler.schedule(['request'], (name) => done.push(name), 'requests');
    while (driven.turn()) await Promise.resolve();
    await recorded;
    expect(done.at(-1)).toBe('recorded');
    expect(done.indexOf('request')).toBeLessThan(done.indexOf('record-19'));
  });

  it('runs batches one after another in the order they were scheduled, a batch scheduled from work included', () => {
    const driven = handDriven(8);
    const done: string[] = [];
    const tick = driven.cost(1);
    driven.scheduler.schedule(
      Array.from({ length: 20 }, (_, i) => `a${i}`),
      (name) => {
        done.push(name);
        tick();
        if (name === 'a0') driven.scheduler.schedule(['c'], (c) => done.push(c), 'requests');
      },
      'requests',
    );
    driven.scheduler.schedule(['b'], (b) => done.push(b), 'requests');
    while (driven.turn());
    expect(done).toEqual([...Array.from({ length: 20 }, (_, i) => `a${i}`), 'c', 'b']);
  });

  it('says when the work scheduled before it has run, not before, for a caller that waits for its own batch', async () => {
    const driven = handDriven(8);
    const done: number[] = [];
    const tick = driven.cost(1);
    driven.scheduler.schedule(
      Array.from({ length: 40 }, (_, i) => i),
      (n) => {
        done.push(n);
        tick();
      },
      'requests',
    );
    let settled = false;
    const waiting = driven.scheduler.settled('requests').then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    while (driven.turn());
    await waiting;
    expect(done).toHaveLength(40);
    // With nothing scheduled, at once.
    await driven.scheduler.settled('requests');
    expect(driven.scheduler.busy).toBe(false);
  });

  it('runs thousands of one-request batches in order over many turns, with more arriving as they drain', () => {
    const driven = handDriven(8);
    const tick = driven.cost(1);
    const done: number[] = [];
    const request = (n: number) =>
      driven.scheduler.schedule(
        [n],
        (item) => {
          done.push(item);
          tick();
        },
        'requests',
      );
    for (let n = 0; n < 3_000; n++) request(n);
    // A storm's later requests arrive while the first thousands are still being worked through.
    let next = 3_000;
    while (driven.turn()) {
      if (next < 6_000) for (const end = next + 500; next < end; next++) request(next);
    }
    expect(done).toEqual(Array.from({ length: 6_000 }, (_, n) => n));
    expect(driven.scheduler.busy).toBe(false);
  });

  it('ignores an empty batch', () => {
    const driven = handDriven();
    driven.scheduler.schedule(
      [],
      () => {
        throw new Error('no work for an empty batch');
      },
      'requests',
    );
    expect(driven.scheduler.busy).toBe(false);
    expect(driven.turn()).toBe(false);
  });
});
