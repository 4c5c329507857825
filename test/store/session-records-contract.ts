import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionRecordBatch } from '../../src/store/session-records.js';
import type { EventLog } from '../../src/store/types.js';

const HOUR = 3_600_000;
/** Short enough to wait out, long enough that a save just made is well within it on a busy machine. */
const TTL = 500;

function batch(id: string, upserts: SessionRecordBatch['upserts'], removals: readonly string[] = []): SessionRecordBatch {
  return { instance: { id, xds: `${id}:5678`, api: `${id}:5681`, startedAt: '2030-01-02T03:04:05.000Z' }, upserts, removals };
}

function record(node: string, state = 'serving') {
  return { node, state, since: '2030-01-02T03:04:06.000Z', body: { node, state, types: { CDS: { acked: 'abc' } } } };
}

/**
 * The session records every EventLog backend keeps (issue 4): each backend's test file calls
 * this with a factory for a fresh, empty log, as it does `eventLogContract`.
 */
export function sessionRecordsContract(name: string, newLog: () => Promise<EventLog>): void {
  describe(`${name} keeps session records`, () => {
    let log: EventLog;

    beforeEach(async () => {
      log = await newLog();
    });

    afterEach(async () => {
      await log.close();
    });

    it('reads back what instances saved, by node then instance, and says when an instance is new', async () => {
      const records = log.sessionRecords;
      expect(await records.save(batch('b', [record('default.x'), record('default.y', 'awaiting-snapshot')]))).toBe(true);
      expect(await records.save(batch('a', [record('default.x', 'disconnected')]))).toBe(true);
      expect(await records.save(batch('a', []))).toBe(false);

      const listed = await records.list(HOUR);
      expect(listed.map((r) => [r.node, r.instance, r.state])).toEqual([
        ['default.x', 'a', 'disconnected'],
        ['default.x', 'b', 'serving'],
        ['default.y', 'b', 'awaiting-snapshot'],
      ]);
      expect(listed[1]).toMatchObject({ since: '2030-01-02T03:04:06.000Z', body: { node: 'default.x', types: { CDS: { acked: 'abc' } } } });
      expect(Date.parse(listed[1]!.updatedAt)).not.toBeNaN();
      expect((await records.list(HOUR, 'default.y')).map((r) => r.instance)).toEqual(['b']);
      expect((await records.instances(HOUR)).map((i) => [i.id, i.xds, i.api, i.startedAt])).toEqual([
        ['a', 'a:5678', 'a:5681', '2030-01-02T03:04:05.000Z'],
        ['b', 'b:5678', 'b:5681', '2030-01-02T03:04:05.000Z'],
      ]);
    });

    it('treats a restart under the same id as joining: the earlier process’s records go', async () => {
      const records = log.sessionRecords;
      await records.save(batch('a', [record('default.x'), record('default.y')]));
      const restarted = { ...batch('a', [record('default.z')]), instance: { ...batch('a', []).instance, startedAt: '2030-01-02T04:00:00.000Z' } };
      expect(await records.save(restarted)).toBe(true);
      expect((await records.list(HOUR)).map((r) => r.node)).toEqual(['default.z']);
      expect((await records.instances(HOUR)).map((i) => i.startedAt)).toEqual(['2030-01-02T04:00:00.000Z']);
      expect(await records.save({ ...restarted, upserts: [] })).toBe(false);
    });

    it('keeps a node’s story from the last save that had one', async () => {
      const records = log.sessionRecords;
      await records.save(batch('a', [{ ...record('default.x'), story: ['opened', 'served'] }]));
      await records.save(batch('a', [record('default.x', 'serving')]));
      expect((await records.list(HOUR))[0]).toMatchObject({ state: 'serving', story: ['opened', 'served'] });
      await records.save(batch('a', [{ ...record('default.x', 'disconnected'), story: ['opened', 'served', 'closed'] }]));
      expect((await records.list(HOUR))[0]).toMatchObject({ state: 'disconnected', story: ['opened', 'served', 'closed'] });
      await records.save(batch('b', [record('default.x')]));
      expect((await records.list(HOUR, 'default.x')).map((r) => r.story)).toEqual([['opened', 'served', 'closed'], undefined]);
    });

    it('replaces a node’s record on the next save, and removes only the saving instance’s own record', async () => {
      const records = log.sessionRecords;
      await records.save(batch('a', [record('default.x')]));
      await records.save(batch('b', [record('default.x')]));
      await records.save(batch('a', [record('default.x', 'disconnected')]));
      expect((await records.list(HOUR)).map((r) => [r.instance, r.state])).toEqual([
        ['a', 'disconnected'],
        ['b', 'serving'],
      ]);

      // Eviction on one instance never removes the state another instance is using.
      await records.save(batch('a', [], ['default.x']));
      expect((await records.list(HOUR)).map((r) => [r.node, r.instance])).toEqual([['default.x', 'b']]);
    });

    it('expires instances that stopped saving, with their records, and forgets one that left', async () => {
      const records = log.sessionRecords;
      await records.save(batch('dead', [record('default.x')]));
      // The store's own clock decides: let it pass the ttl for `dead`, then `alive` saves.
      await sleep(2 * TTL);
      await records.save(batch('alive', [record('default.y')]));
      expect((await records.list(TTL)).map((r) => r.instance)).toEqual(['alive']);
      expect((await records.instances(TTL)).map((i) => i.id)).toEqual(['alive']);

      expect(await records.expire(TTL)).toBe(1);
      expect((await records.list(HOUR)).map((r) => r.instance)).toEqual(['alive']);
      // Saving again after it was expired: the instance is new to the store and must resave everything.
      expect(await records.save(batch('dead', []))).toBe(true);

      await records.leave('alive');
      expect((await records.instances(HOUR)).map((i) => i.id)).toEqual(['dead']);
      expect(await records.list(HOUR)).toEqual([]);
    });
  });
}
