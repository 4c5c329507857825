import { filter, firstValueFrom, Subject } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/store/errors.js';
import { openEventLog } from '../../src/store/open-event-log.js';
import { createResourceStore } from '../../src/store/resource-store.js';
import type { EventLog, ResourceStore } from '../../src/store/types.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { dataplane, dataplaneKey, mesh, meshKey } from './fixtures.js';
import { startTestPostgres, withAddress, type TestPostgres } from './test-postgres.js';

let postgres: TestPostgres;
let proxy: TcpProxy;
let url: string;
const closables: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  postgres = await startTestPostgres();
  url = await postgres.newDatabase();
  proxy = await startTcpProxy([postgres.address]);
});

afterAll(async () => {
  for (const closable of closables.splice(0).reverse()) await closable.close();
  await proxy?.close();
  await postgres?.stop();
});

async function open(database: string, instance: string): Promise<EventLog> {
  const log = await openEventLog(database, { instance });
  closables.push(log);
  return log;
}

describe('a Postgres outage (issue 3, scope 5)', () => {
  it('leaves the store not ready, writes failing and the projection as it was; once Postgres is back it reconnects and catches up by itself with what another writer did meanwhile', async () => {
    // This instance reaches Postgres through the proxy; the other writer directly.
    const log = await open(withAddress(url, '127.0.0.1', proxy.port), 'behind-proxy');
    const resync = new Subject<void>();
    const errors = new Subject<StoreUnavailableError>();
    const store: ResourceStore = createResourceStore(log, {
      instance: 'behind-proxy',
      resync,
      onError: (error) => errors.next(error),
    });
    closables.push(store);
    await store.start();
    await store.put(dataplane('default', 'web-1'));
    const before = store.projection;
    const emitted: number[] = [];
    store.projections.subscribe((projection) => emitted.push(projection.revision));
    expect(store.ready).toBe(true);

    // The lost LISTEN connection wakes the feed, whose catch-up fails: not ready, nothing emitted.
    const failed = firstValueFrom(errors);
    proxy.switchOff();
    expect(await failed).toBeInstanceOf(StoreUnavailableError);
    expect(store.ready).toBe(false);

    await expect(store.put(mesh('payments'))).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.delete(dataplaneKey('default', 'web-1'))).rejects.toMatchObject({ code: 'CHANCERY_STORE_UNAVAILABLE' });
    const other = createResourceStore(await open(url, 'other'), { instance: 'other', resync: new Subject() });
    closables.push(other);
    await other.start();
    await other.put(dataplane('default', 'web-2'));

    const failedAgain = firstValueFrom(errors);
    resync.next();
    expect((await failedAgain).cause).toBeDefined();
    expect(store.ready).toBe(false);
    expect(store.projection).toBe(before);
    expect(store.get(dataplaneKey('default', 'web-1'))).toBeDefined();
    expect(emitted).toEqual([before.revision]);

    // Back: with no resync, the LISTEN connection's own reconnection wakes the catch-up.
    const caughtUp = firstValueFrom(
      store.projections.pipe(filter((projection) => projection.meshes.get('default')?.dataplanes.has('web-2') === true)),
    );
    proxy.switchOn();
    await caughtUp;
    expect(store.ready).toBe(true);
    expect(store.get(meshKey('payments'))).toBeUndefined();
    const stored = await store.put(mesh('payments'));
    expect(store.get(meshKey('payments'))).toEqual(stored);
  });
});
