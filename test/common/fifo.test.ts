import { describe, expect, it } from 'vitest';
import { Fifo } from '../../src/common/index.js';

describe('Fifo', () => {
  it('gives entries back oldest first, across the compactions of a long queue', () => {
    const queue = new Fifo<number>();
    for (let i = 0; i < 5_000; i++) queue.push(i);
    const taken: number[] = [];
    for (let i = 0; i < 3_000; i++) taken.push(queue.shift()!);
    for (let i = 5_000; i < 6_000; i++) queue.push(i);
    expect(queue.length).toBe(3_000);
    expect(queue.first).toBe(3_000);
    while (queue.length > 0) taken.push(queue.shift()!);
    expect(taken).toEqual(Array.from({ length: 6_000 }, (_, i) => i));
    expect(queue.shift()).toBeUndefined();
    expect(queue.first).toBeUndefined();
  });

  it('drains what is left, oldest first, and is empty after', () => {
    const queue = new Fifo<string>();
    for (const item of ['a', 'b', 'c']) queue.push(item);
    queue.shift();
    expect(queue.drain()).toEqual(['b', 'c']);
    expect(queue.length).toBe(0);
    queue.push('d');
    expect(queue.shift()).toBe('d');
  });
});
