import { describe, expect, it } from 'vitest';
import { parseDuration, protoDuration } from '../../src/policies/index.js';

describe('durations as Kuma writes them (Go format)', () => {
  it.each<[string, number]>([
    ['1s', 1_000],
    ['500ms', 500],
    ['1h30m', 5_400_000],
    ['1.5s', 1_500],
    ['0s', 0],
    ['20m', 1_200_000],
    ['250us', 0.25],
  ])('reads %s as %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '1', 's', '-1s', '1 s', '1d', '1S', 'P1S', '1s ', '1.s.5'])('refuses %j', (text) => expect(parseDuration(text)).toBeUndefined());

  it('writes a protobuf Duration with whole seconds and nanos', () => {
    expect(protoDuration('1.25s')).toEqual({ seconds: 1, nanos: 250_000_000 });
    expect(protoDuration('2h')).toEqual({ seconds: 7_200 });
    expect(protoDuration('1ms')).toEqual({ nanos: 1_000_000 });
    expect(protoDuration('0s')).toEqual({});
  });
});
