import { filter, firstValueFrom, NEVER, Subject } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MeshNotFoundError, NotFoundError, StoreUnavailableError, VersionConflictError } from '../../src/store/errors.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import { createMemoryStore, createResourceStore, type ResourceStoreOptions } from '../../src/store/resource-store.js';
import { asResourceVersion, asSeq, type EventLog, type ResourceEvent, type ResourceStore } from '../../src/store/types.js';
import { author, dataplane, dataplaneKey, mesh, meshKey } from './fixtures.js';
import { ScriptedLog } from './scripted-log.js';

const opened: ResourceStore[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
});

/** A started store on `log`, with no resync unless the test passes one. */
async function startedStore(log: EventLog, options: Partial<ResourceStoreOptions> = {}): Promise<ResourceStore> {
  const store = createResourceStore(log, { instance: 'cp-1', resync: NEVER, ...options });
  opened.push(store);
  await store.start();
  return store;
}

async function readAll(log: EventLog) {
  return log.readAfter(asSeq(0), 10_000);
}

describe('starting', () => {
  it('creates Mesh default when it starts on an empty log, and is ready after', async () => {
    const log = new MemoryEventLog();
    const store = createResourceStore(log, { instance: 'cp-1', resync: NEVER });
    opened.push(store);
    expect(store.ready).toBe(false);
    await store.start();
    expect(store.ready).toBe(true);
    expect(store.get(meshKey('default'))?.version).toBe(1);
    expect(await readAll(log)).toMatchObject([{ kind: 'upserted', key: meshKey('default'), by: { instance: 'cp-1' } }]);
  });

  it('does not create default again when a store restarts on the same log', async () => {
    const log = new MemoryEventLog();
    const first = await startedStore(log);
    await first.put(mesh('payments'));
    await first.close();
    const second = await startedStore(log);
    expect(second.list('Mesh').map((stored) => stored.resource.name)).toEqual(['default', 'payments']);
    expect(await readAll(log)).toHaveLength(2);
  });

  it('does not create default again after it was deleted', async () => {
    const log = new MemoryEventLog();
    await (await startedStore(log)).delete(meshKey('default'));
    const second = await startedStore(log);
    expect(second.list('Mesh')).toEqual([]);
  });

  it('creates default once when two stores start together on one empty log', async () => {
    const log = new MemoryEventLog();
    const [one, two] = await Promise.all([startedStore(log, { instance: 'one' }), startedStore(log, { instance: 'two' })]);
    expect(await readAll(log)).toHaveLength(1);
    expect(one.get(meshKey('default'))).toEqual(two.get(meshKey('default')));
  });

  it('rejects start with StoreUnavailableError when the log cannot be read, and is not ready', async () => {
    const log = new ScriptedLog();
    log.failure = new Error('connection refused');
    const store = createResourceStore(log, { instance: 'cp-1', resync: NEVER });
    await expect(store.start()).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(store.ready).toBe(false);
    await expect(store.put(mesh('m'))).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe('writing and reading', () => {
  it('puts, gets and lists resources, listing by mesh then name', async () => {
    const store = await startedStore(new MemoryEventLog());
    await store.put(mesh('payments'));
    await store.put(dataplane('payments', 'b'));
    await store.put(dataplane('default', 'z'));
    await store.put(dataplane('payments', 'a'));
    expect(store.get(dataplaneKey('payments', 'b'))?.resource).toEqual(dataplane('payments', 'b'));
    expect(store.get(dataplaneKey('payments', 'missing'))).toBeUndefined();
    expect(store.get(meshKey('missing'))).toBeUndefined();
    const names = (type: 'Mesh' | 'Dataplane', meshName?: string) =>
      store.list(type, meshName).map(({ resource }) => (resource.type === 'Mesh' ? resource.name : `${resource.mesh}/${resource.name}`));
    expect(names('Mesh')).toEqual(['default', 'payments']);
    expect(names('Dataplane')).toEqual(['default/z', 'payments/a', 'payments/b']);
    expect(names('Dataplane', 'payments')).toEqual(['payments/a', 'payments/b']);
    expect(names('Mesh', 'payments')).toEqual(['payments']);
    expect(names('Dataplane', 'missing')).toEqual([]);
  });

  it('resolves a put with what was stored: version 1 on create, then 2, with its seq and time', async () => {
    const log = new MemoryEventLog({ now: () => new Date('2030-01-02T03:04:05.000Z') });
    const store = await startedStore(log);
    const created = await store.put(dataplane('default', 'a'));
    expect(created).toEqual({ resource: dataplane('default', 'a'), version: 1, seq: 2, updatedAt: '2030-01-02T03:04:05.000Z' });
    const updated = await store.put(dataplane('default', 'a', 20001), { expected: asResourceVersion(1) });
    expect(updated).toMatchObject({ version: 2, seq: 3 });
    expect(store.get(dataplaneKey('default', 'a'))).toEqual(updated);
  });

  it('records the instance and the caller as the author of a write', async () => {
    const log = new MemoryEventLog();
    const store = await startedStore(log);
    await store.put(mesh('m'), { caller: '10.0.0.7' });
    await store.delete(meshKey('m'), { caller: 'alice' });
    const [, put, deletion] = await readAll(log);
    expect(put!.by).toEqual({ instance: 'cp-1', caller: '10.0.0.7' });
    expect(deletion!.by).toEqual({ instance: 'cp-1', caller: 'alice' });
  });

  it('rejects a Dataplane whose mesh does not exist with MeshNotFoundError and appends nothing', async () => {
    const log = new MemoryEventLog();
    const store = await startedStore(log);
    const attempt = store.put(dataplane('missing', 'a'));
    await expect(attempt).rejects.toBeInstanceOf(MeshNotFoundError);
    await expect(attempt).rejects.toMatchObject({ mesh: 'missing', key: dataplaneKey('missing', 'a') });
    expect(await readAll(log)).toHaveLength(1);
  });

  it('rejects a put with a stale expected version, or a create-only put of an existing resource', async () => {
    const store = await startedStore(new MemoryEventLog());
    await store.put(dataplane('default', 'a'));
    await store.put(dataplane('default', 'a', 20001));
    await expect(store.put(dataplane('default', 'a', 20001), { expected: asResourceVersion(1) })).rejects.toMatchObject({
      code: 'CHANCERY_STORE_VERSION_CONFLICT',
      expected: 1,
      actual: 2,
    });
    await expect(store.put(dataplane('default', 'a'), { expected: 'absent' })).rejects.toBeInstanceOf(VersionConflictError);
    expect(store.get(dataplaneKey('default', 'a'))?.version).toBe(2);
  });

  it('answers a put identical to what is stored as unchanged: the same version, and no event', async () => {
    const log = new MemoryEventLog();
    const store = await startedStore(log);
    const created = await store.put(dataplane('default', 'a'));
    const before = await readAll(log);
    const again = await store.put(dataplane('default', 'a'), { expected: created.version });
    expect(again).toEqual(created);
    expect(await readAll(log)).toEqual(before);
    expect(store.projection.revision).toBe(created.seq);
  });

  it('tells each write of a batch apart: created, configured, unchanged or deleted, and the revisions it spans', async () => {
    const log = new MemoryEventLog();
    const store = await startedStore(log);
    await store.put(dataplane('default', 'a'));
    await store.put(dataplane('default', 'b'));
    const from = store.projection.revision;
    const written = await store.write([
      { kind: 'upserted', resource: dataplane('default', 'a') },
      { kind: 'upserted', resource: dataplane('default', 'b', 20001) },
      { kind: 'upserted', resource: dataplane('default', 'c') },
    ]);
    expect(written.items.map((item) => [item.key.name, item.outcome, item.stored?.version])).toEqual([
      ['a', 'unchanged', 1],
      ['b', 'configured', 2],
      ['c', 'created', 1],
    ]);
    expect(written).toMatchObject({ from, revision: from + 2 });
    expect(written.events.map((event) => event.key.name)).toEqual(['b', 'c']);
    const deleted = await store.write([{ kind: 'deleted', key: dataplaneKey('default', 'c') }]);
    expect(deleted).toMatchObject({ from: from + 2, revision: from + 3, items: [{ outcome: 'deleted' }] });
    const nothing = await store.write([{ kind: 'upserted', resource: dataplane('default', 'a') }]);
    expect(nothing).toMatchObject({ from: from + 3, revision: from + 3, events: [] });
  });

  it('writes a resource this store thinks identical once another writer changed it since', async () => {
    const log = new MemoryEventLog();
    const store = await startedStore(log);
    await store.put(dataplane('default', 'a'));
    // Another instance changes it; this store has not read that yet (no wake-ups reach it).
    await log.append([{ kind: 'upserted', resource: dataplane('default', 'a', 20001) }], { instance: 'cp-2' });
    const written = await store.put(dataplane('default', 'a'));
    expect(written.version).toBe(3);
    expect(store.get(dataplaneKey('default', 'a'))?.resource).toEqual(dataplane('default', 'a'));
  });

  it('deletes a Dataplane, honouring its expected version', async () => {
    const store = await startedStore(new MemoryEventLog());
    await store.put(dataplane('default', 'a'));
    await expect(store.delete(dataplaneKey('default', 'a'), { expected: asResourceVersion(7) })).rejects.toBeInstanceOf(
      VersionConflictError,
    );
    await store.delete(dataplaneKey('default', 'a'), { expected: asResourceVersion(1) });
    expect(store.get(dataplaneKey('default', 'a'))).toBeUndefined();
  });

  it('rejects deleting a missing resource with NotFoundError', async () => {
    const store = await startedStore(new MemoryEventLog());
    await expect(store.delete(dataplaneKey('default', 'missing'))).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.delete(meshKey('missing'))).rejects.toMatchObject({ code: 'CHANCERY_STORE_NOT_FOUND', key: meshKey('missing') });
    await expect(store.delete(meshKey('missing'), { expected: 'absent' })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('deletes a Mesh and its Dataplanes in one batch, Dataplanes first', async () => {
    const log = new MemoryEventLog();
    const store = await startedStore(log);
    await store.put(mesh('payments'));
    await store.put(dataplane('payments', 'a'));
    await store.put(dataplane('payments', 'b'));
    await store.put(dataplane('default', 'c'));
    const append = vi.spyOn(log, 'append');

    await store.delete(meshKey('payments'));

    expect(append).toHaveBeenCalledTimes(1);
    const events = await append.mock.results[0]!.value;
    expect(events.map((event: ResourceEvent) => [event.kind, event.key])).toEqual([
      ['deleted', dataplaneKey('payments', 'a')],
      ['deleted', dataplaneKey('payments', 'b')],
      ['deleted', meshKey('payments')],
    ]);
    expect(store.get(meshKey('payments'))).toBeUndefined();
    expect(store.list('Dataplane').map((stored) => stored.resource.name)).toEqual(['c']);
  });

  it('deletes with a Mesh a Dataplane another writer added that this store has not read yet', async () => {
    const log = new ScriptedLog({ loseWakeups: true });
    const deleter = await startedStore(log);
    const writer = await startedStore(log.inner, { instance: 'cp-2' });
    await writer.put(mesh('payments'));
    await deleter.put(dataplane('payments', 'a'));
    await writer.put(dataplane('payments', 'late'));
    expect(deleter.get(dataplaneKey('payments', 'late'))).toBeUndefined();

    await deleter.delete(meshKey('payments'));

    const events = await readAll(log);
    expect(events.slice(-3).map((event) => [event.kind, event.key.name])).toEqual([
      ['deleted', 'a'],
      ['deleted', 'late'],
      ['deleted', 'payments'],
    ]);
    // Re-created, the mesh is empty: nothing of it was left behind in the log.
    await writer.put(mesh('payments'));
    await expect(writer.put(dataplane('payments', 'late'), { expected: 'absent' })).resolves.toMatchObject({ version: 3 });
  });

  it('deletes nothing of a mesh whose own delete conflicts', async () => {
    const store = await startedStore(new MemoryEventLog());
    await store.put(mesh('payments'));
    await store.put(dataplane('payments', 'a'));
    await expect(store.delete(meshKey('payments'), { expected: asResourceVersion(9) })).rejects.toBeInstanceOf(VersionConflictError);
    expect(store.get(dataplaneKey('payments', 'a'))).toBeDefined();
  });

  it('reads its own write as soon as put resolves, even when wake-ups are lost', async () => {
    const store = await startedStore(new ScriptedLog({ loseWakeups: true }));
    const stored = await store.put(dataplane('default', 'a'));
    expect(store.get(dataplaneKey('default', 'a'))).toEqual(stored);
    expect(store.projection.revision).toBe(stored.seq);
    await store.delete(dataplaneKey('default', 'a'));
    expect(store.get(dataplaneKey('default', 'a'))).toBeUndefined();
  });

  it('rejects writes with StoreUnavailableError once closed', async () => {
    const store = createMemoryStore({ instance: 'cp-1', resync: NEVER });
    await store.start();
    await store.close();
    expect(store.ready).toBe(false);
    await expect(store.put(mesh('m'))).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.delete(meshKey('default'))).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe('projections', () => {
  it('emits the current projection on subscribe, then each newer one in revision order', async () => {
    const store = await startedStore(new MemoryEventLog());
    const revisions: number[] = [];
    const subscription = store.projections.subscribe((projection) => revisions.push(projection.revision));
    expect(revisions).toEqual([1]);
    await Promise.all([store.put(mesh('a')), store.put(mesh('b')), store.put(mesh('c'))]);
    await store.delete(meshKey('a'));
    subscription.unsubscribe();
    expect(revisions[0]).toBe(1);
    expect(revisions.at(-1)).toBe(5);
    for (let i = 1; i < revisions.length; i += 1) expect(revisions[i]).toBeGreaterThan(revisions[i - 1]!);
  });

  it('keeps the MeshState of meshes a write did not touch', async () => {
    const store = await startedStore(new MemoryEventLog());
    await store.put(mesh('payments'));
    const before = store.projection;
    await store.put(dataplane('payments', 'a'));
    expect(store.projection.meshes.get('default')).toBe(before.meshes.get('default'));
    expect(store.projection.meshes.get('payments')).not.toBe(before.meshes.get('payments'));
  });

  it('follows writes another store makes to the same log', async () => {
    const log = new MemoryEventLog();
    const reader = await startedStore(log, { instance: 'reader' });
    const writer = await startedStore(log, { instance: 'writer' });
    const seen = firstValueFrom(reader.projections.pipe(filter((projection) => projection.meshes.has('payments'))));
    await writer.put(mesh('payments'));
    expect((await seen).meshes.get('payments')?.mesh.resource).toEqual(mesh('payments'));
  });

  it('is not ready while catch-ups fail, still tries writes, and is ready again after a catch-up succeeds', async () => {
    const log = new ScriptedLog();
    const resync = new Subject<void>();
    const errors = new Subject<StoreUnavailableError>();
    const store = await startedStore(log, { resync, onError: (error) => errors.next(error) });
    expect(store.ready).toBe(true);

    log.failure = new Error('connection refused');
    const failed = firstValueFrom(errors);
    resync.next();
    await failed;
    expect(store.ready).toBe(false);
    expect(store.failure).toMatchObject({ code: 'CHANCERY_STORE_UNAVAILABLE', cause: log.failure });

    log.failure = undefined;
    // The write reaches the log, and its own catch-up makes the store ready again.
    await store.put(mesh('payments'));
    expect(store.ready).toBe(true);
    expect(store.failure).toBeUndefined();
    expect(store.get(meshKey('payments'))).toBeDefined();
  });

  it('keeps the last projection and emits nothing while readAfter rejects, then catches up on resync', async () => {
    const log = new ScriptedLog();
    const resync = new Subject<void>();
    const errors = new Subject<StoreUnavailableError>();
    const store = await startedStore(log, { resync, onError: (error) => errors.next(error) });
    const before = store.projection;
    const emitted: number[] = [];
    store.projections.subscribe((projection) => emitted.push(projection.revision));

    log.failure = new Error('connection refused');
    const failed = firstValueFrom(errors);
    // Another instance writes while this one cannot read.
    await log.append([{ kind: 'upserted', resource: mesh('payments') }], author);
    expect(await failed).toMatchObject({ code: 'CHANCERY_STORE_UNAVAILABLE' });
    expect(store.projection).toBe(before);
    expect(store.get(meshKey('default'))).toBeDefined();
    expect(emitted).toEqual([1]);

    log.failure = undefined;
    const recovered = firstValueFrom(store.projections.pipe(filter((projection) => projection.revision === 2)));
    resync.next();
    expect((await recovered).meshes.has('payments')).toBe(true);
    expect(emitted).toEqual([1, 2]);
  });
});
