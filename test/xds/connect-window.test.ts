import { describe, expect, it } from 'vitest';
import { ConnectWindow } from '../../src/xds/connect-window.js';

/** A window on a clock the test moves, whose one pending wake-up the test fires by hand. */
function windowOf(max: number, patienceMs: number) {
  let now = 0;
  let pending: { at: number; wake: () => void } | undefined;
  const window = new ConnectWindow({
    max,
    patienceMs,
    now: () => now,
    after: (ms, wake) => {
      const timer = { at: now + ms, wake };
      pending = timer;
      return () => {
        if (pending === timer) pending = undefined;
      };
    },
  });
  return {
    window,
    /** Moves the clock to `at`, firing the wake-up if it is due by then. */
    advanceTo(at: number) {
      now = at;
      const due = pending;
      if (due !== undefined && due.at <= at) {
        pending = undefined;
        due.wake();
      }
    },
    get timerAt() {
      return pending?.at;
    },
  };
}

describe('the connect window: connections taken on and not answered yet', () => {
  it('has room until `max` connections wait for their answer, and each answer or close makes room', () => {
    const { window } = windowOf(2, 1_000);
    window.enter('10.0.0.1:1');
    expect(window.hasRoom).toBe(true);
    window.enter('10.0.0.1:2');
    expect(window.hasRoom).toBe(false);
    window.leave('10.0.0.1:1');
    expect(window.hasRoom).toBe(true);
    // Told again (its close after its answer), or of a connection it never held: nothing changes.
    window.leave('10.0.0.1:1');
    window.leave('10.0.0.9:9');
    expect(window.size).toBe(1);
  });

  it('lets a connection go once it has waited `patienceMs`, answered or not', () => {
    const { window, advanceTo } = windowOf(2, 1_000);
    window.enter('a:1');
    advanceTo(400);
    window.enter('b:1');
    expect(window.hasRoom).toBe(false);
    advanceTo(999);
    expect(window.size).toBe(2);
    advanceTo(1_000);
    expect(window.size).toBe(1);
    advanceTo(1_400);
    expect(window.size).toBe(0);
  });

  it('wakes everyone waiting (each listener of the server) as soon as a connection leaves, once', () => {
    const { window } = windowOf(1, 1_000);
    window.enter('a:1');
    const woken: string[] = [];
    window.whenRoom(() => woken.push('one listener'));
    window.whenRoom(() => woken.push('another'));
    expect(woken).toEqual([]);
    window.leave('a:1');
    expect(woken).toEqual(['one listener', 'another']);
    // Woken once: a later leave wakes no one.
    window.enter('b:1');
    window.leave('b:1');
    expect(woken).toEqual(['one listener', 'another']);
  });

  it('wakes the one waiting when the oldest connection’s patience runs out, though nothing answered it', () => {
    const { window, advanceTo } = windowOf(2, 1_000);
    window.enter('a:1');
    advanceTo(300);
    window.enter('b:1');
    let woken = 0;
    window.whenRoom(() => woken++);
    expect(woken).toBe(0);
    advanceTo(1_000);
    expect(woken).toBe(1);
    expect(window.size).toBe(1);
  });

  it('wakes at once a caller who asks while nothing is connecting', () => {
    const clocked = windowOf(1, 1_000);
    let woken = 0;
    clocked.window.whenRoom(() => woken++);
    expect(woken).toBe(1);
    expect(clocked.timerAt).toBeUndefined();
  });

  it('keeps a peer entered again (its port reused) as the newest, so an older one still expires first', () => {
    const { window, advanceTo } = windowOf(3, 1_000);
    window.enter('a:1');
    advanceTo(100);
    window.enter('b:1');
    advanceTo(200);
    window.enter('a:1');
    advanceTo(1_100);
    // b entered at 100 and is gone; a, entered again at 200, is not.
    expect(window.size).toBe(1);
    window.leave('a:1');
    expect(window.size).toBe(0);
  });
});
