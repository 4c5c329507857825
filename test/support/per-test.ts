import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';

/**
 * Registers hooks of a test file (or a `describe`): `start` before each test (or, with `'all'`,
 * once before them all) and `stop` after. Returns a stand-in for what `start` made: each
 * property is read, at each use, from the one of the test running now, so a file declares it
 * once at the top and its tests use it as their own.
 */
export function perTest<T extends object>(start: () => Promise<T>, stop: (started: T) => Promise<void>, scope: 'each' | 'all' = 'each'): T {
  let current: T | undefined;
  (scope === 'each' ? beforeEach : beforeAll)(async () => {
    current = await start();
  });
  (scope === 'each' ? afterEach : afterAll)(async () => {
    const started = current;
    current = undefined;
    if (started !== undefined) await stop(started);
  });
  return new Proxy({} as T, {
    get(_target, property) {
      if (current === undefined) throw new Error(`${String(property)} was read outside the tests it was started for`);
      const value: unknown = Reflect.get(current, property);
      return typeof value === 'function' ? value.bind(current) : value;
    },
  });
}
