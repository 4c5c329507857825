import { describe, expect, it } from 'vitest';
import { writesOf } from '../../src/changes/index.js';
import { asSeq, type ResourceEvent } from '../../src/store/index.js';
import { dataplane, dataplaneKey, deleted, upserted } from '../store/fixtures.js';

const inBatch = (event: ResourceEvent, batch: number): ResourceEvent => ({ ...event, batch: asSeq(batch) });

describe('writesOf', () => {
  it('tells writes apart by their batch, newest first, even when they share a time and an author', () => {
    const events = [
      inBatch(upserted(4, dataplane('default', 'a')), 4),
      inBatch(upserted(5, dataplane('default', 'b')), 5),
      inBatch(upserted(6, dataplane('default', 'c')), 5),
      inBatch(deleted(7, dataplaneKey('default', 'a')), 7),
    ];
    expect(writesOf(events).map(({ since, revision, events: count, resources }) => [since, revision, count, resources.map((resource) => `${resource.kind} ${resource.name}`)])).toEqual([
      [6, 7, 1, ['deleted a']],
      [4, 6, 2, ['upserted b', 'upserted c']],
      [3, 4, 1, ['upserted a']],
    ]);
  });

  it('reads an event written before batches were recorded as a write of its own', () => {
    const events = [upserted(1, dataplane('default', 'a')), upserted(2, dataplane('default', 'b'))];
    expect(writesOf(events).map(({ revision }) => revision)).toEqual([2, 1]);
  });
});
