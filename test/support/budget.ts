import { availableParallelism, loadavg } from 'node:os';

/** The most a budget is stretched: past it, a test that still runs out of time is stuck, not slow. */
const MOST = 4;

/**
 * How many times slower than a quiet machine this one runs the tests: `CHANCERY_TEST_SLOWDOWN`
 * when set (a number ≥ 1), else the last minute's load average per core when the process
 * started, between 1 and `MOST`. A quiet machine running the suite (two vitest workers on two
 * cores) is 1; seven engineers' runs on the same two cores are 4.
 */
export function measureSlowdown(env = process.env.CHANCERY_TEST_SLOWDOWN, load = loadavg()[0]!, cores = availableParallelism()): number {
  if (env !== undefined && env !== '') {
    const factor = Number(env);
    if (!Number.isFinite(factor) || factor < 1) throw new Error(`CHANCERY_TEST_SLOWDOWN=${env} is not a number of at least 1`);
    return factor;
  }
  return Math.min(MOST, Math.max(1, load / cores));
}

/** This process's slowdown, measured once: every budget of one test file scales alike. */
export const SLOWDOWN = measureSlowdown();

/**
 * `ms`, the time something takes at most on a quiet machine, scaled to this one: what a test
 * waits on an event before it fails naming it. A budget only bounds a wait; nothing sleeps for it.
 */
export function budget(ms: number): number {
  return Math.ceil(ms * SLOWDOWN);
}
