import { describe, expect, it } from 'vitest';
import { measureSlowdown } from './budget.js';

describe('the slowdown test budgets scale by', () => {
  it('is the load average per core, at least 1 and at most 4', () => {
    expect(measureSlowdown(undefined, 0.3, 2)).toBe(1);
    expect(measureSlowdown(undefined, 2, 2)).toBe(1);
    expect(measureSlowdown(undefined, 5, 2)).toBe(2.5);
    expect(measureSlowdown(undefined, 16, 2)).toBe(4);
  });

  it('is CHANCERY_TEST_SLOWDOWN when set, whatever the load', () => {
    expect(measureSlowdown('3', 0, 2)).toBe(3);
    expect(measureSlowdown('1', 16, 2)).toBe(1);
    expect(measureSlowdown('', 5, 2)).toBe(2.5);
  });

  it.each(['0.5', 'fast', '-2', 'Infinity'])('refuses CHANCERY_TEST_SLOWDOWN=%s, naming it', (value) => {
    expect(() => measureSlowdown(value, 1, 2)).toThrow(`CHANCERY_TEST_SLOWDOWN=${value} is not a number of at least 1`);
  });
});
