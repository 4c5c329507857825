import { describe, expect, it } from 'vitest';
import { isoTime } from '../../src/common/index.js';

const iso = (at: number) => new Date(at).toISOString();

describe('isoTime', () => {
  it('writes what toISOString writes, at the edges of seconds, days, months and years', () => {
    const edges = [
      0,
      999,
      1_000,
      Date.UTC(2024, 1, 28, 23, 59, 59, 999),
      Date.UTC(2024, 1, 29, 0, 0, 0, 0),
      Date.UTC(2024, 1, 29, 12, 34, 56, 7),
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(2027, 0, 1),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    ];
    // Back and forth between days too: the date part kept for one day must not leak into another.
    for (const at of [...edges, ...edges.slice().reverse()]) expect(isoTime(at)).toBe(iso(at));
  });

  it('writes what toISOString writes for times spread over four-digit years', () => {
    let seed = 12_345;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    for (let i = 0; i < 20_000; i++) {
      const at = Math.floor(next() * Date.UTC(9999, 11, 31, 23, 59, 59, 999));
      expect(isoTime(at)).toBe(iso(at));
    }
  });

  it('leaves times before 1970 and after 9999 to toISOString, drops fractions of a ms as it does, and throws as it does on no time', () => {
    for (const at of [-1, -86_400_001, Date.UTC(10_000, 0, 1), 8.64e15, 1_733_000_000_123.9]) expect(isoTime(at)).toBe(iso(at));
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
  });
});
