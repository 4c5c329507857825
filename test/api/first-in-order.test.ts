import { describe, expect, it } from 'vitest';
import { firstInOrder } from '../../src/api/first-in-order.js';
import { compareText } from '../../src/common/index.js';

/** A deterministic pseudo-random sequence (xorshift), so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

describe('firstInOrder', () => {
  it('gives the first items of a full sort, for every count, on shuffled, sorted and reversed input', () => {
    const next = random(12);
    const names = Array.from({ length: 600 }, (_, i) => `node-${Math.floor(next() * 1_000)}-${i}`);
    const sorted = [...names].sort(compareText);
    for (const input of [names, sorted, [...sorted].reverse()]) {
      for (const count of [0, 1, 2, 20, 100, 256, 257, 599, 600, 700]) {
        expect(firstInOrder(input, count, compareText)).toEqual(sorted.slice(0, count));
      }
    }
  });

  it('leaves its input as it was', () => {
    const input = ['c', 'a', 'b'];
    firstInOrder(input, 2, compareText);
    expect(input).toEqual(['c', 'a', 'b']);
  });
});
