import { describe, expect, it } from 'vitest';
import { Subscription } from '../../src/xds/index.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';

const names = (subscription: Subscription) => ({ wildcard: subscription.wildcard, names: [...subscription.names].sort() });

/** Applies each request's names in turn; returns every subscription along the way. */
function walk(typeUrl: typeof LISTENER | typeof ENDPOINT | typeof CLUSTER, ...requests: string[][]): Subscription[] {
  const steps = [Subscription.none(typeUrl)];
  for (const request of requests) steps.push(steps.at(-1)!.update(request));
  return steps.slice(1);
}

describe('Subscription.update: a request repeating the last names changes nothing, any other list is read anew', () => {
  it('keeps the subscription itself when an ACK repeats the names, and when they come in another order', () => {
    const [first, repeated, reordered] = walk(ENDPOINT, ['a', 'b'], ['a', 'b'], ['b', 'a']);
    expect(repeated).toBe(first);
    expect(reordered).toBe(first);
    expect(names(first!)).toEqual({ wildcard: false, names: ['a', 'b'] });
  });

  it('reads a list of as many names with one named twice as the one name it is', () => {
    const [, twice, again] = walk(ENDPOINT, ['a', 'b'], ['a', 'a'], ['a', 'b']);
    expect(names(twice!)).toEqual({ wildcard: false, names: ['a'] });
    expect(names(again!)).toEqual({ wildcard: false, names: ['a', 'b'] });
    expect(again!.key).not.toBe(twice!.key);
  });

  it('walks the legacy wildcard the same with each request sent twice: all, all plus A, only A, nothing', () => {
    const steps = walk(LISTENER, [], [], ['*', 'A'], ['*', 'A'], ['A'], ['A'], [], []);
    expect(steps.map(names)).toEqual([
      { wildcard: true, names: [] },
      { wildcard: true, names: [] },
      { wildcard: true, names: ['A'] },
      { wildcard: true, names: ['A'] },
      { wildcard: false, names: ['A'] },
      { wildcard: false, names: ['A'] },
      { wildcard: false, names: [] },
      { wildcard: false, names: [] },
    ]);
  });
});

describe('Subscription: streams subscribed alike share one subscription', () => {
  it('gives two streams asking for the same names, in any order, the same object, and others their own', () => {
    const [first] = walk(ENDPOINT, ['a', 'b']);
    const [second] = walk(ENDPOINT, ['b', 'a']);
    const [other] = walk(ENDPOINT, ['a', 'c']);
    expect(second).toBe(first);
    expect(other).not.toBe(first);
    expect(names(other!)).toEqual({ wildcard: false, names: ['a', 'c'] });
  });

  it('answers each stream updating the one shared subscription for its own list, whichever stream came before', () => {
    const none = Subscription.none(ENDPOINT);
    expect(Subscription.none(ENDPOINT)).toBe(none);
    const lists = [['a', 'b'], ['c'], ['a', 'b'], [], ['b', 'a'], ['c', 'c'], ['a', 'b']];
    const updated = lists.map((list) => none.update(list));
    expect(updated.map(names)).toEqual([
      { wildcard: false, names: ['a', 'b'] },
      { wildcard: false, names: ['c'] },
      { wildcard: false, names: ['a', 'b'] },
      { wildcard: false, names: [] },
      { wildcard: false, names: ['a', 'b'] },
      { wildcard: false, names: ['c'] },
      { wildcard: false, names: ['a', 'b'] },
    ]);
    expect(updated[2]).toBe(updated[0]);
    expect(updated[4]).toBe(updated[0]);
    expect(updated[5]).toBe(updated[1]);
    // Listeners' legacy wildcard from the same kind of start: all, then only what is named.
    const listeners = Subscription.none(LISTENER);
    expect([[], ['A'], []].map((list) => names(listeners.update(list)))).toEqual([
      { wildcard: true, names: [] },
      { wildcard: false, names: ['A'] },
      { wildcard: true, names: [] },
    ]);
  });

  it('keeps the legacy wildcard apart from a wildcard named explicitly, and listeners apart from clusters', () => {
    const [legacy] = walk(LISTENER, []);
    const [, named, dropped] = walk(LISTENER, [], ['*', 'A'], ['*']);
    const [explicit] = walk(LISTENER, ['*']);
    expect(explicit).toBe(dropped);
    expect(explicit).not.toBe(legacy);
    expect(named).not.toBe(legacy);
    // The legacy wildcard still ends when a name is given; the explicit one stays.
    expect(names(legacy!.update(['A']))).toEqual({ wildcard: false, names: ['A'] });
    expect(names(explicit!.update([]))).toEqual({ wildcard: false, names: [] });
    expect(walk(CLUSTER, [])[0]).not.toBe(legacy);
  });
});
