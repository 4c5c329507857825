import { describe, expect, it } from 'vitest';
import { isoTime } from '../src/iso-time.js';

describe('isoTime', () => {
  it('writes what toISOString writes, for times in one second, across seconds, before 1970 and past 9999', () => {
    const times = [
      0, 1, 9, 10, 99, 100, 999, 1_000, 1_764_800_000_000, 1_764_800_000_007, 1_764_800_000_050, 1_764_800_000_999, 1_764_800_001_000,
      1_764_800_000_123.9, -0.5, -1.5, -1, -999, -1_000, -86_400_001, 253_402_300_799_999, 253_402_300_800_000, 8_640_000_000_000_000, -8_640_000_000_000_000,
    ];
    // In order and shuffled: the remembered second must never leak into another.
    for (const order of [times, [...times].reverse(), times.filter((_, i) => i % 2 === 0).concat(times.filter((_, i) => i % 2 === 1))]) {
      expect(order.map(isoTime)).toEqual(order.map((at) => new Date(at).toISOString()));
    }
  });

  it('refuses a time that is not one, as toISOString does', () => {
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(() => isoTime(8_640_000_000_000_001)).toThrow(RangeError);
    expect(() => isoTime(-8_640_000_000_000_001)).toThrow(RangeError);
  });
});
