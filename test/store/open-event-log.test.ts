import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { NEVER } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError, UnsupportedStoreError } from '../../src/store/errors.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import { openEventLog, parseStoreSpec } from '../../src/store/open-event-log.js';
import { createResourceStore } from '../../src/store/resource-store.js';
import { asSeq, type EventLog, type ResourceStore } from '../../src/store/types.js';
import { freePort } from '../support/ports.js';
import { dataplaneKey, mesh, meshKey, writeRestartHistory } from './fixtures.js';

describe('parseStoreSpec', () => {
  it('reads memory, PGlite in a directory or in memory, and Postgres URLs', () => {
    expect(parseStoreSpec('memory')).toEqual({ kind: 'memory' });
    expect(parseStoreSpec('pglite:./.chancery/data')).toEqual({ kind: 'pglite', dir: './.chancery/data' });
    expect(parseStoreSpec('pglite:/var/lib/chancery')).toEqual({ kind: 'pglite', dir: '/var/lib/chancery' });
    expect(parseStoreSpec('pglite:')).toEqual({ kind: 'pglite', dir: undefined });
    expect(parseStoreSpec('pglite:memory')).toEqual({ kind: 'pglite', dir: undefined });
    expect(parseStoreSpec('postgres://u@db:5432/chancery')).toEqual({ kind: 'postgres', url: 'postgres://u@db:5432/chancery' });
    expect(parseStoreSpec('postgresql://db/chancery')).toEqual({ kind: 'postgres', url: 'postgresql://db/chancery' });
  });

  it.each(['mysql://db/chancery', 'pglite', 'Memory', '', './data'])('refuses %j, naming it and the accepted forms', (spec) => {
    let thrown: unknown;
    try {
      parseStoreSpec(spec);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UnsupportedStoreError);
    expect(thrown).toMatchObject({ code: 'CHANCERY_STORE_UNSUPPORTED', spec });
    expect((thrown as Error).message).toBe(
      `store "${spec}" is not supported: use one of memory, pglite:<dir>, pglite:memory, postgres://…, postgresql://…`,
    );
  });
});

describe('openEventLog', () => {
  it('opens memory as a MemoryEventLog', async () => {
    const log = await openEventLog('memory', { instance: 'cp-1' });
    expect(log).toBeInstanceOf(MemoryEventLog);
    await log.close();
  });

  it('rejects an unsupported spec with UnsupportedStoreError', async () => {
    await expect(openEventLog('sqlite:chancery.db', { instance: 'cp-1' })).rejects.toBeInstanceOf(UnsupportedStoreError);
  });

  it('rejects with StoreUnavailableError, keeping the cause, when Postgres cannot be reached', async () => {
    const port = await freePort();
    const attempt = openEventLog(`postgres://postgres@127.0.0.1:${port}/chancery`, { instance: 'cp-1' });
    await expect(attempt).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(attempt).rejects.toMatchObject({ cause: { code: 'ECONNREFUSED' } });
  });

  describe('pglite:<dir>', () => {
    let parent: string;

    beforeAll(async () => {
      parent = await mkdtemp(path.join(tmpdir(), 'chancery-pglite-'));
    });

    afterAll(async () => {
      await rm(parent, { recursive: true, force: true });
    });

    async function startedStore(log: EventLog, instance: string): Promise<ResourceStore> {
      const store = createResourceStore(log, { instance, resync: NEVER });
      await store.start();
      return store;
    }

    it('creates the directory, and a store reopened on it finds its resources and their history', async () => {
      const dir = path.join(parent, 'nested', 'data');
      const spec = `pglite:${dir}`;

      const first = await openEventLog(spec, { instance: 'cp-1' });
      expect(existsSync(dir)).toBe(true);
      const writer = await startedStore(first, 'cp-1');
      await writeRestartHistory(writer);
      const before = writer.projection;
      const history = await first.readAfter(asSeq(0), 100);
      await writer.close();
      await first.close();

      const second = await openEventLog(spec, { instance: 'cp-2' });
      const reader = await startedStore(second, 'cp-2');
      expect(reader.projection.revision).toBe(before.revision);
      expect(reader.list('Mesh').map((stored) => stored.resource.name)).toEqual(['default', 'payments']);
      expect(reader.get(dataplaneKey('payments', 'a'))).toEqual(before.meshes.get('payments')?.dataplanes.get('a'));
      expect(reader.get(dataplaneKey('payments', 'a'))?.version).toBe(2);
      expect(reader.get(dataplaneKey('payments', 'b'))).toBeUndefined();
      expect(await second.readAfter(asSeq(0), 100)).toEqual(history);
      expect(history.find((event) => event.key.name === 'payments')?.by).toEqual({ instance: 'cp-1', caller: 'alice' });
      // The restarted store did not create Mesh default again.
      expect(history.filter((event) => event.key.name === 'default')).toHaveLength(1);
      await reader.put(mesh('more'));
      expect(reader.get(meshKey('more'))?.seq).toBe(before.revision + 1);
      await reader.close();
      await second.close();
    });
  });
});

