import { NEVER } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreSchemaTooNewError, VersionConflictError } from '../../src/store/errors.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openEventLog } from '../../src/store/open-event-log.js';
import { createResourceStore } from '../../src/store/resource-store.js';
import { asSeq, type EventLog, type ResourceStore } from '../../src/store/types.js';
import { eventLogContract } from './event-log-contract.js';
import { sessionRecordsContract } from './session-records-contract.js';
import { dataplane, dataplaneKey, meshKey, RESTART_HISTORY, writeRestartHistory } from './fixtures.js';
import { sql, startTestPostgres, type TestPostgres } from './test-postgres.js';

let postgres: TestPostgres;
/** The database the contract runs in, emptied before each log. */
let url: string;

beforeAll(async () => {
  postgres = await startTestPostgres();
  url = await postgres.newDatabase();
  await (await openEventLog(url, { instance: 'migrate' })).close();
});

afterAll(async () => {
  await postgres?.stop();
});

async function freshLog() {
  await sql(url, 'TRUNCATE events, resources, checkpoints, checkpoint_resources, instances, session_records');
  return openEventLog(url, { instance: 'contract' });
}

eventLogContract('SqlEventLog on Postgres', freshLog);
sessionRecordsContract('SqlEventLog on Postgres', freshLog);

describe('SqlEventLog on Postgres', () => {
  const opened: { close(): Promise<void> }[] = [];

  afterAll(async () => {
    for (const closable of opened.splice(0).reverse()) await closable.close();
  });

  async function open(database: string, instance: string): Promise<EventLog> {
    const log = await openEventLog(database, { instance });
    opened.push(log);
    return log;
  }

  async function startedStore(log: EventLog, instance: string): Promise<ResourceStore> {
    const store = createResourceStore(log, { instance, resync: NEVER });
    await store.start();
    opened.push(store);
    return store;
  }

  it('migrates a new database once when several instances start on it at the same time', async () => {
    const database = await postgres.newDatabase();
    const logs = await Promise.all(['one', 'two', 'three', 'four'].map((instance) => open(database, instance)));
    expect(logs).toHaveLength(4);
    expect(await sql(database, 'SELECT version, name FROM schema_migrations ORDER BY version')).toEqual(
      MIGRATIONS.map(({ version, name }) => ({ version, name })),
    );
  });

  it('refuses a database migrated by a newer Chancery', async () => {
    const database = await postgres.newDatabase();
    await open(database, 'first');
    await sql(database, "INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')");
    const attempt = openEventLog(database, { instance: 'old' });
    await expect(attempt).rejects.toBeInstanceOf(StoreSchemaTooNewError);
    await expect(attempt).rejects.toMatchObject({ code: 'CHANCERY_STORE_SCHEMA_TOO_NEW', found: 99, known: MIGRATIONS.at(-1)!.version });
  });

  it('keeps resources and history across a restart: a new store on the same database finds them', async () => {
    const database = await postgres.newDatabase();
    const firstLog = await openEventLog(database, { instance: 'cp-1' });
    const first = createResourceStore(firstLog, { instance: 'cp-1', resync: NEVER });
    await first.start();
    await writeRestartHistory(first);
    const before = first.projection;
    const history = await firstLog.readAfter(asSeq(0), 100);
    await first.close();
    await firstLog.close();

    const secondLog = await open(database, 'cp-2');
    const second = await startedStore(secondLog, 'cp-2');
    expect(second.projection.revision).toBe(before.revision);
    expect(second.list('Mesh').map((stored) => stored.resource.name)).toEqual(['default', 'payments']);
    expect(second.get(dataplaneKey('payments', 'a'))).toEqual(before.meshes.get('payments')?.dataplanes.get('a'));
    expect(second.get(dataplaneKey('payments', 'b'))).toBeUndefined();
    expect(await secondLog.readAfter(asSeq(0), 100)).toEqual(history);
    expect(history.map((event) => [event.seq, event.kind, event.key.name, event.version])).toEqual(RESTART_HISTORY);
    expect(history[1]!.by).toEqual({ instance: 'cp-1', caller: 'alice' });
  });

  it('lets one of two instances writing with the same expected version win; the other gets a conflict and the log one event', async () => {
    const database = await postgres.newDatabase();
    const [one, two] = await Promise.all([open(database, 'one'), open(database, 'two')]);
    const [storeOne, storeTwo] = await Promise.all([startedStore(one, 'one'), startedStore(two, 'two')]);
    const created = await storeOne.put(dataplane('default', 'a'));
    const expected = { expected: created.version };

    const results = await Promise.allSettled([
      storeOne.put(dataplane('default', 'a', 20001), expected),
      storeTwo.put(dataplane('default', 'a', 20002), expected),
    ]);

    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    const [rejected] = results.filter((result) => result.status === 'rejected');
    expect(rejected?.reason).toBeInstanceOf(VersionConflictError);
    expect(rejected?.reason).toMatchObject({ key: dataplaneKey('default', 'a'), expected: 1, actual: 2 });
    const events = await one.readAfter(created.seq, 100);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ key: dataplaneKey('default', 'a'), version: 2 });
  });

  it('creates Mesh default once when two instances start on an empty database at the same time', async () => {
    const database = await postgres.newDatabase();
    const [one, two] = await Promise.all([open(database, 'one'), open(database, 'two')]);
    const [storeOne, storeTwo] = await Promise.all([startedStore(one, 'one'), startedStore(two, 'two')]);
    expect(await one.readAfter(asSeq(0), 10)).toHaveLength(1);
    expect(storeOne.get(meshKey('default'))).toEqual(storeTwo.get(meshKey('default')));
  });
});
