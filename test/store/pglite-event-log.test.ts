import { firstValueFrom, NEVER } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Mesh, Valid } from '../../src/mesh/resources.js';
import { StoreRejectedWriteError } from '../../src/store/errors.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { PgliteClient } from '../../src/store/pglite-client.js';
import { createResourceStore } from '../../src/store/resource-store.js';
import { SqlEventLog } from '../../src/store/sql-event-log.js';
import { asSeq } from '../../src/store/types.js';
import { eventLogContract } from './event-log-contract.js';
import { sessionRecordsContract } from './session-records-contract.js';
import { author, dataplane, dataplaneKey, mesh, meshKey } from './fixtures.js';

// PGlite.create() runs initdb (seconds): one database for the file, emptied before each log.
let client: PgliteClient;

beforeAll(async () => {
  client = await PgliteClient.open();
});

afterAll(async () => {
  await client.close();
});

async function freshLog(): Promise<SqlEventLog> {
  const log = await SqlEventLog.open(client, { ownsClient: false });
  await client.exec('TRUNCATE events, resources, checkpoints, checkpoint_resources, instances, session_records');
  return log;
}

eventLogContract('SqlEventLog on PGlite', freshLog);
sessionRecordsContract('SqlEventLog on PGlite', freshLog);

describe('SqlEventLog on PGlite', () => {
  it('reads a Mesh stored before meshes named their dataplaneAuth as open to any dataplane (none)', async () => {
    const log = await freshLog();
    await log.append([{ kind: 'upserted', resource: { ...mesh('old'), dataplaneAuth: 'token' } }], author);
    // As an earlier Chancery wrote it: the body has no dataplaneAuth at all.
    await client.exec(`UPDATE events SET body = body - 'dataplaneAuth'`);
    const [event] = await log.readAfter(asSeq(0), 1);
    expect(event).toMatchObject({ kind: 'upserted', resource: { type: 'Mesh', name: 'old', dataplaneAuth: 'none' } });
    expect(await log.readAt(meshKey('old'), asSeq(1))).toMatchObject({ resource: { dataplaneAuth: 'none' } });
    await log.close();
  });

  it('stamps events with the injected clock, and reads the time back to the millisecond', async () => {
    await (await freshLog()).close();
    const log = await SqlEventLog.open(client, { ownsClient: false, now: () => new Date('2030-05-06T07:08:09.123Z') });
    const [event] = await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
    expect(event!.at).toBe('2030-05-06T07:08:09.123Z');
    expect((await log.readAfter(asSeq(0), 1))[0]!.at).toBe('2030-05-06T07:08:09.123Z');
    await log.close();
  });

  it('keeps each key’s head: its last version, whether it is live, and the seq of its last event', async () => {
    const log = await freshLog();
    await log.append(
      [
        { kind: 'upserted', resource: mesh('a') },
        { kind: 'upserted', resource: mesh('b') },
        { kind: 'upserted', resource: mesh('a') },
        { kind: 'deleted', key: meshKey('b') },
        { kind: 'upserted', resource: mesh('c') },
      ],
      author,
    );
    expect(await client.query('SELECT name, version, live, seq FROM resources ORDER BY name')).toEqual([
      { name: 'a', version: 2, live: true, seq: 3 },
      { name: 'b', version: 2, live: false, seq: 4 },
      { name: 'c', version: 1, live: true, seq: 5 },
    ]);
    await log.close();
  });

  it('reports a value the database refuses as a rejected write, not as an outage, and appends nothing', async () => {
    const log = await freshLog();
    // Validation refuses a NUL before any store sees it; this bypasses it to reach the database.
    const attempt = log.append([{ kind: 'upserted', resource: { type: 'Mesh', name: 'a\u0000b' } as Valid<Mesh> }], author);
    await expect(attempt).rejects.toBeInstanceOf(StoreRejectedWriteError);
    await expect(attempt).rejects.toMatchObject({ code: 'CHANCERY_STORE_REJECTED_WRITE', operation: 'appending 1 events' });
    expect(await log.readAfter(asSeq(0), 10)).toEqual([]);
    await log.close();
  });

  it('wakes another log on the same database when one appends', async () => {
    const writer = await freshLog();
    const reader = await SqlEventLog.open(client, { ownsClient: false });
    const woken = firstValueFrom(reader.wakeups);
    await writer.append([{ kind: 'upserted', resource: mesh('a') }], author);
    await expect(woken).resolves.toBeUndefined();
    await Promise.all([writer.close(), reader.close()]);
  });

  it('records each migration once however often the log is opened', async () => {
    const logs = await Promise.all([1, 2, 3].map(() => SqlEventLog.open(client, { ownsClient: false })));
    expect(await client.query('SELECT version FROM schema_migrations ORDER BY version')).toEqual(
      MIGRATIONS.map(({ version }) => ({ version })),
    );
    await Promise.all(logs.map((log) => log.close()));
  });

  it('serves a ResourceStore that reads its own writes and deletes a mesh with its dataplanes', async () => {
    const log = await freshLog();
    const store = createResourceStore(log, { instance: 'cp-1', resync: NEVER });
    await store.start();
    await store.put(mesh('payments'));
    await store.put(dataplane('payments', 'a'));
    expect(store.get(dataplaneKey('payments', 'a'))?.resource).toEqual(dataplane('payments', 'a'));
    await store.delete(meshKey('payments'));
    expect(store.get(dataplaneKey('payments', 'a'))).toBeUndefined();
    const events = await log.readAfter(asSeq(0), 10);
    expect(events.map((event) => [event.kind, event.key.name])).toEqual([
      ['upserted', 'default'],
      ['upserted', 'payments'],
      ['upserted', 'a'],
      ['deleted', 'a'],
      ['deleted', 'payments'],
    ]);
    // The cascade is one batch: one transaction, consecutive seqs, one time.
    expect(events[3]!.at).toBe(events[4]!.at);
    await store.close();
    await log.close();
  });
});
