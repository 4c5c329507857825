import { firstValueFrom, NEVER, ReplaySubject, Subject, take, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Compaction } from '../../src/store/compaction.js';
import { FutureRevisionError, InvalidRetentionError, RevisionCompactedError } from '../../src/store/errors.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import { checkpointOf, projectionOf } from '../../src/store/projection.js';
import { createResourceStore, type ResourceStoreOptions } from '../../src/store/resource-store.js';
import { asSeq, type EventLog, type ResourceStore, type Retention } from '../../src/store/types.js';
import { dataplane, dataplaneKey, mesh, meshKey } from './fixtures.js';
import { ScriptedLog } from './scripted-log.js';

const opened: ResourceStore[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
});

async function startedStore(log: EventLog, options: Partial<ResourceStoreOptions> = {}): Promise<ResourceStore> {
  const store = createResourceStore(log, { instance: 'cp-1', resync: NEVER, compaction: NEVER, ...options });
  opened.push(store);
  await store.start();
  return store;
}

/** Mesh default (seq 1), then: payments, a, b, a again, b deleted, c: seqs 2–7. */
async function writeHistory(store: ResourceStore): Promise<void> {
  await store.put(mesh('payments'));
  await store.put(dataplane('payments', 'a'));
  await store.put(dataplane('payments', 'b'));
  await store.put(dataplane('payments', 'a', 20001));
  await store.delete(dataplaneKey('payments', 'b'));
  await store.put(dataplane('payments', 'c'));
}

/** A clock a test moves by hand. */
function manualClock(start: string): { now: () => Date; advance(ms: number): void } {
  let time = Date.parse(start);
  return { now: () => new Date(time), advance: (ms) => (time += ms) };
}

describe('reading history through the store', () => {
  it('answers a resource at a revision, and undefined where it did not exist', async () => {
    const store = await startedStore(new MemoryEventLog());
    await writeHistory(store);
    expect((await store.getAt(dataplaneKey('payments', 'a'), asSeq(3)))?.resource).toEqual(dataplane('payments', 'a'));
    expect((await store.getAt(dataplaneKey('payments', 'a'), asSeq(5)))?.version).toBe(2);
    expect(await store.getAt(dataplaneKey('payments', 'b'), asSeq(6))).toBeUndefined();
    expect(await store.getAt(meshKey('payments'), asSeq(1))).toBeUndefined();
  });

  it('refuses a revision the log has not reached with FutureRevisionError', async () => {
    const store = await startedStore(new MemoryEventLog());
    const attempt = store.getAt(meshKey('default'), asSeq(2));
    await expect(attempt).rejects.toBeInstanceOf(FutureRevisionError);
    await expect(attempt).rejects.toMatchObject({ code: 'CHANCERY_STORE_FUTURE_REVISION', revision: 2, current: 1 });
  });

  it('answers a revision another writer reached before this store caught up', async () => {
    const log = new ScriptedLog({ loseWakeups: true });
    const reader = await startedStore(log);
    const writer = await startedStore(log.inner, { instance: 'cp-2' });
    await writer.put(mesh('payments'));
    expect(reader.projection.revision).toBe(1);
    expect((await reader.getAt(meshKey('payments'), asSeq(2)))?.resource).toEqual(mesh('payments'));
  });

  it('reads the log and one resource’s events', async () => {
    const store = await startedStore(new MemoryEventLog());
    await writeHistory(store);
    expect((await store.readEvents(asSeq(5), 10)).map((event) => event.seq)).toEqual([6, 7]);
    const { horizon, events } = await store.history(dataplaneKey('payments', 'b'), asSeq(0), 10);
    expect(horizon).toBe(0);
    expect(events.map((event) => [event.kind, event.version])).toEqual([
      ['upserted', 1],
      ['deleted', 2],
    ]);
  });
});

describe('retention', () => {
  it('keeps every event without a retention setting', async () => {
    const log = new MemoryEventLog();
    const store = await startedStore(log);
    await writeHistory(store);
    expect(await store.compact()).toBeUndefined();
    expect(await log.readAfter(asSeq(0), 100)).toHaveLength(7);
  });

  it('keeps the newest N events, folding the rest into a checkpoint', async () => {
    const log = new MemoryEventLog();
    const compactions: Compaction[] = [];
    const store = await startedStore(log, { retention: { events: 3 }, onCompacted: (compaction) => compactions.push(compaction) });
    await writeHistory(store);
    expect(await store.compact()).toBe(4);
    expect(compactions).toEqual([{ previous: 0, horizon: 4 }]);
    expect((await log.readAfter(asSeq(4), 100)).map((event) => event.seq)).toEqual([5, 6, 7]);
    expect(projectionOf(await log.readCheckpoint()).meshes.get('payments')?.dataplanes.get('a')?.version).toBe(1);
  });

  it('keeps the events written within the age, by the clock it is given', async () => {
    const clock = manualClock('2030-01-01T00:00:00.000Z');
    const log = new MemoryEventLog({ now: clock.now });
    const store = await startedStore(log, { retention: { maxAge: 60_000 }, now: clock.now });
    await store.put(mesh('old'));
    clock.advance(30_000);
    await store.put(mesh('newer'));
    clock.advance(40_000);
    expect(await store.compact()).toBe(2);
    expect((await log.readAfter(asSeq(2), 10)).map((event) => event.key.name)).toEqual(['newer']);
    clock.advance(60_000);
    expect(await store.compact()).toBe(3);
    expect(await log.readAfter(asSeq(3), 10)).toEqual([]);
    expect(store.list('Mesh').map((stored) => stored.resource.name)).toEqual(['default', 'newer', 'old']);
  });

  it('compacts on start and on each trigger', async () => {
    const log = new MemoryEventLog();
    const first = await startedStore(log);
    await writeHistory(first);
    await first.close();
    const trigger = new Subject<void>();
    const compactions = new ReplaySubject<Compaction>();
    const store = await startedStore(log, { retention: { events: 5 }, compaction: trigger, onCompacted: (compaction) => compactions.next(compaction) });
    await store.put(mesh('more'));
    await store.put(mesh('again'));
    trigger.next();
    expect(await firstValueFrom(compactions.pipe(take(2), toArray()))).toEqual([
      { previous: 0, horizon: 2 },
      { previous: 2, horizon: 4 },
    ]);
  });

  it('refuses a setting that keeps nothing, before starting', () => {
    for (const retention of [{ events: 0 }, { events: 1.5 }, { maxAge: 0 }, { maxAge: Number.NaN }, {}, { events: 1, maxAge: 1 }]) {
      expect(() => createResourceStore(new MemoryEventLog(), { instance: 'cp-1', retention: retention as Retention }), JSON.stringify(retention)).toThrow(
        InvalidRetentionError,
      );
    }
  });

  it('refuses revisions older than the retained history with RevisionCompactedError, and answers the rest', async () => {
    const store = await startedStore(new MemoryEventLog(), { retention: { events: 3 } });
    await writeHistory(store);
    await store.compact();
    await expect(store.getAt(dataplaneKey('payments', 'a'), asSeq(3))).rejects.toMatchObject({ revision: 3, horizon: 4 });
    await expect(store.readEvents(asSeq(0), 10)).rejects.toBeInstanceOf(RevisionCompactedError);
    expect((await store.getAt(dataplaneKey('payments', 'a'), asSeq(4)))?.version).toBe(1);
    expect((await store.getAt(dataplaneKey('payments', 'a'), asSeq(5)))?.version).toBe(2);
    expect((await store.getAt(dataplaneKey('payments', 'b'), asSeq(5)))?.version).toBe(1);
    expect(await store.getAt(dataplaneKey('payments', 'b'), asSeq(6))).toBeUndefined();
    expect((await store.history(dataplaneKey('payments', 'b'), asSeq(0), 10)).horizon).toBe(4);
  });
});

describe('starting from a checkpoint', () => {
  it('rebuilds from the newest checkpoint plus the events after it, to what reading every event gave', async () => {
    const log = new ScriptedLog();
    const writer = await startedStore(log.inner, { retention: { events: 2 } });
    await writeHistory(writer);
    await writer.compact();
    const expected = writer.projection;
    await writer.close();

    const restarted = await startedStore(log);
    expect(log.checkpointReads).toBe(1);
    expect(restarted.projection).toEqual(expected);
    expect(checkpointOf(restarted.projection)).toEqual(checkpointOf(expected));
    // Not Mesh default again: the log is not empty, its events are in the checkpoint.
    expect((await log.readCheckpoint()).resources.filter((stored) => stored.resource.name === 'default')).toHaveLength(1);
  });

  it('follows a compaction that overtook it by loading the checkpoint, then carries on with events', async () => {
    const log = new ScriptedLog({ loseWakeups: true });
    const resync = new Subject<void>();
    const follower = await startedStore(log, { resync });
    const writer = await startedStore(log.inner, { instance: 'cp-2', retention: { events: 1 } });
    await writeHistory(writer);
    await writer.compact();
    await writer.put(mesh('later'));

    const caughtUp = new Promise<void>((resolve) => follower.projections.subscribe((projection) => projection.revision === 8 && resolve()));
    resync.next();
    await caughtUp;
    expect(log.checkpointReads).toBe(1);
    expect(follower.projection).toEqual(writer.projection);
  });
});
