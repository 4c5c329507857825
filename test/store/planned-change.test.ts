import fc from 'fast-check';
import { NEVER } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import { applyEvents, checkpointOf, emptyProjection } from '../../src/store/projection.js';
import { createResourceStore } from '../../src/store/resource-store.js';
import { asResourceVersion, asSeq, type ResourceStore, type Write } from '../../src/store/types.js';
import { fuzz } from '../support/fuzz.js';
import { dataplane, dataplaneKey, mesh, meshKey } from './fixtures.js';

const opened: ResourceStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
});

const now = () => new Date('2030-01-01T00:00:00.000Z');

async function started(log = new MemoryEventLog({ now })): Promise<{ store: ResourceStore; log: MemoryEventLog }> {
  const store = createResourceStore(log, { instance: 'cp-1', resync: NEVER, now });
  opened.push(store);
  await store.start();
  return { store, log };
}

/** A projection's resources, comparable whatever the objects' identities and the maps' order. */
const contents = (projection: Parameters<typeof checkpointOf>[0]) => ({
  revision: projection.revision,
  resources: [...checkpointOf(projection).resources].sort((a, b) => idOf(a).localeCompare(idOf(b))),
});
const idOf = ({ resource }: { resource: { type: string; name: string; mesh?: string } }) => `${resource.type}/${resource.mesh ?? ''}/${resource.name}`;

describe('plan: what a write would do, appending nothing', () => {
  it('answers the projection a batch would make, from the log’s end, with each write’s outcome', async () => {
    const { store, log } = await started();
    await store.put(dataplane('default', 'a'));
    // Written by another instance: the plan follows the log’s end, not what this store last read.
    await log.append([{ kind: 'upserted', resource: dataplane('default', 'b') }], { instance: 'cp-2' });
    const writes: Write[] = [
      { kind: 'upserted', resource: dataplane('default', 'a') },
      { kind: 'upserted', resource: dataplane('default', 'b', 20001) },
      { kind: 'upserted', resource: mesh('payments') },
      { kind: 'upserted', resource: dataplane('payments', 'c') },
    ];
    const before = await log.readAfter(asSeq(0), 100);
    const planned = await store.plan(writes);
    expect(await log.readAfter(asSeq(0), 100)).toEqual(before);
    expect(planned.before.revision).toBe(3);
    expect(planned.items.map((item) => [item.key.name, item.outcome])).toEqual([
      ['a', 'unchanged'],
      ['b', 'configured'],
      ['payments', 'created'],
      ['c', 'created'],
    ]);
    // The same projection the real write then makes, event for event.
    const written = await store.write(writes);
    expect(planned.events.map(({ by: _by, ...event }) => event)).toEqual(written.events.map(({ by: _by, ...event }) => event));
    expect(contents(planned.after)).toEqual(contents(store.projection));
  });

  it('refuses what the write would refuse, with the same errors', async () => {
    const { store } = await started();
    await store.put(dataplane('default', 'a'));
    await expect(store.plan([{ kind: 'upserted', resource: dataplane('nowhere', 'a') }])).rejects.toMatchObject({ code: 'CHANCERY_STORE_MESH_NOT_FOUND' });
    await expect(store.plan([{ kind: 'deleted', key: dataplaneKey('default', 'missing') }])).rejects.toMatchObject({ code: 'CHANCERY_STORE_NOT_FOUND' });
    await expect(store.plan([{ kind: 'upserted', resource: dataplane('default', 'a', 2), expected: asResourceVersion(7) }])).rejects.toMatchObject({
      code: 'CHANCERY_STORE_VERSION_CONFLICT',
      expected: 7,
      actual: 1,
    });
  });

  it('plans the deletion of a mesh with everything in it, as the log would', async () => {
    const { store } = await started();
    await store.put(mesh('payments'));
    await store.put(dataplane('payments', 'c'));
    const planned = await store.plan([{ kind: 'deleted', key: meshKey('payments') }]);
    expect(planned.events.map((event) => [event.kind, event.key.name])).toEqual([
      ['deleted', 'c'],
      ['deleted', 'payments'],
    ]);
    expect(planned.after.meshes.has('payments')).toBe(false);
  });
});

describe('write at a revision', () => {
  it('writes a planned batch only onto the revision it was planned at', async () => {
    const { store, log } = await started();
    const planned = await store.plan([{ kind: 'upserted', resource: dataplane('default', 'a') }]);
    await log.append([{ kind: 'upserted', resource: dataplane('default', 'b') }], { instance: 'cp-2' });
    await expect(store.write([{ kind: 'upserted', resource: dataplane('default', 'a') }], { atRevision: planned.before.revision })).rejects.toMatchObject({
      code: 'CHANCERY_STORE_REVISION_MOVED',
    });
    expect(store.get(dataplaneKey('default', 'a'))).toBeUndefined();
  });
});

describe('projectionAt: the resources as they were at a revision', () => {
  it('equals the fold of the log up to that revision, for every revision, whatever the writes', async () => {
    const names = fc.constantFrom('a', 'b', 'c');
    const write = fc.oneof(
      fc.record({ op: fc.constant('mesh' as const), mesh: fc.constantFrom('m', 'n') }),
      fc.record({ op: fc.constant('dataplane' as const), mesh: fc.constantFrom('m', 'n'), name: names, port: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ op: fc.constant('delete' as const), mesh: fc.constantFrom('m', 'n'), name: fc.option(names, { nil: undefined }) }),
    );
    await fuzz(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 12 }), async (ops) => {
        const { store, log } = await started();
        for (const op of ops) {
          const attempt =
            op.op === 'mesh'
              ? store.put(mesh(op.mesh))
              : op.op === 'dataplane'
                ? store.put(dataplane(op.mesh, op.name, op.port))
                : store.delete(op.name === undefined ? meshKey(op.mesh) : dataplaneKey(op.mesh, op.name));
          // A write the log refuses (a missing mesh or resource) is part of the history too: it appended nothing.
          await attempt.catch(() => undefined);
        }
        const events = await log.readAfter(asSeq(0), 1_000);
        for (let revision = 0; revision <= store.projection.revision; revision++) {
          const folded = applyEvents(emptyProjection(), events.filter((event) => event.seq <= revision));
          expect(contents(await store.projectionAt(asSeq(revision)))).toEqual(contents({ ...folded, revision: asSeq(revision) }));
        }
      }),
      { runs: 40 },
    );
  });

  it('keeps the objects of meshes written neither since nor at the revision', async () => {
    const { store } = await started();
    await store.put(mesh('payments'));
    const revision = store.projection.revision;
    await store.put(dataplane('default', 'a'));
    const then = await store.projectionAt(revision);
    expect(then.meshes.get('payments')).toBe(store.projection.meshes.get('payments'));
    expect(then.meshes.get('default')?.dataplanes.size).toBe(0);
  });

  it('refuses a revision older than the retained history, and one the log has not reached', async () => {
    const log = new MemoryEventLog();
    const store = createResourceStore(log, { instance: 'cp-1', resync: NEVER, retention: { events: 1 }, compaction: NEVER });
    opened.push(store);
    await store.start();
    await store.put(dataplane('default', 'a'));
    await store.put(dataplane('default', 'b'));
    await store.compact();
    await expect(store.projectionAt(asSeq(1))).rejects.toMatchObject({ code: 'CHANCERY_STORE_REVISION_COMPACTED' });
    await expect(store.projectionAt(asSeq(99))).rejects.toMatchObject({ code: 'CHANCERY_STORE_FUTURE_REVISION' });
  });
});
