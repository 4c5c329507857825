import { firstValueFrom } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Dataplane, Valid } from '../../src/mesh/resources.js';
import { NotFoundError, StoreUnavailableError, VersionConflictError } from '../../src/store/errors.js';
import { asResourceVersion, asSeq, type EventLog, type ResourceEvent } from '../../src/store/types.js';
import { author, dataplane, dataplaneKey, mesh, meshKey } from './fixtures.js';

const v = asResourceVersion;

/**
 * The behaviour every EventLog backend shares (memory, PGlite, Postgres): each backend's test
 * file calls this with a factory for a fresh, empty log. The suite closes each log after its
 * test (and a test may close it first), so `close()` must be safe to call twice.
 */
export function eventLogContract(name: string, newLog: () => Promise<EventLog>): void {
  describe(`${name} obeys the EventLog contract`, () => {
    let log: EventLog;

    beforeEach(async () => {
      log = await newLog();
    });

    afterEach(async () => {
      await log.close();
    });

    async function readAll(): Promise<readonly ResourceEvent[]> {
      return log.readAfter(asSeq(0), 10_000);
    }

    describe('appending and reading', () => {
      it('reads back appended events in append order with increasing seqs', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('default') }], author);
        await log.append(
          [
            { kind: 'upserted', resource: dataplane('default', 'a') },
            { kind: 'upserted', resource: dataplane('default', 'b') },
          ],
          author,
        );
        const events = await readAll();
        expect(events.map((event) => event.key.name)).toEqual(['default', 'a', 'b']);
        const seqs = events.map((event) => event.seq);
        expect(seqs[0]).toBeGreaterThanOrEqual(1);
        expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
        expect(new Set(seqs).size).toBe(3);
      });

      it('returns from append the events that readAfter later reads', async () => {
        const appended = await log.append([{ kind: 'upserted', resource: mesh('default') }], author);
        expect(await readAll()).toEqual(appended);
      });

      it('reads only events after the given seq, at most limit of them', async () => {
        for (const name of ['a', 'b', 'c', 'd']) await log.append([{ kind: 'upserted', resource: mesh(name) }], author);
        const all = await readAll();
        const afterFirst = await log.readAfter(all[0]!.seq, 2);
        expect(afterFirst.map((event) => event.key.name)).toEqual(['b', 'c']);
        expect(await log.readAfter(all[3]!.seq, 10)).toEqual([]);
      });

      it('stamps each event with an ISO 8601 time and its author', async () => {
        const by = { instance: 'cp-1', caller: '10.0.0.7' };
        const [event] = await log.append([{ kind: 'upserted', resource: mesh('default') }], by);
        expect(new Date(event!.at).toISOString()).toBe(event!.at);
        expect(event!.by).toEqual(by);
      });

      it('records the resource of an upsert and the key of a delete', async () => {
        const resource = dataplane('default', 'a');
        await log.append([{ kind: 'upserted', resource: mesh('default') }], author);
        await log.append([{ kind: 'upserted', resource }], author);
        await log.append([{ kind: 'deleted', key: dataplaneKey('default', 'a') }], author);
        const [, upsert, deletion] = await readAll();
        expect(upsert).toMatchObject({ kind: 'upserted', key: dataplaneKey('default', 'a'), resource });
        expect(deletion).toMatchObject({ kind: 'deleted', key: dataplaneKey('default', 'a') });
      });

      it('numbers events 1, 2, 3… from an empty log, and a rejected batch leaves no gap', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
        await expect(log.append([{ kind: 'upserted', resource: mesh('a'), expected: 'absent' }], author)).rejects.toBeInstanceOf(
          VersionConflictError,
        );
        await log.append([{ kind: 'upserted', resource: mesh('b') }, { kind: 'upserted', resource: mesh('c') }], author);
        expect((await readAll()).map((event) => event.seq)).toEqual([1, 2, 3]);
      });

      it('keeps names and field values exactly, whatever characters they hold', async () => {
        const odd = `quote" back\\slash ' apostrophe, ünïcödé ✓ 🚀 {"json": [1]}`;
        const base = dataplane(odd, odd);
        const resource = {
          ...base,
          networking: { ...base.networking, inbound: [{ port: 1, servicePort: 1, tags: { service: odd, [odd]: odd } }] },
        } as Valid<Dataplane>;
        await log.append([{ kind: 'upserted', resource: mesh(odd) }], { instance: odd, caller: odd });
        await log.append([{ kind: 'upserted', resource }], author);
        const [meshEvent, dataplaneEvent] = await readAll();
        expect(meshEvent).toMatchObject({ key: meshKey(odd), resource: mesh(odd), by: { instance: odd, caller: odd } });
        expect(dataplaneEvent).toMatchObject({ key: dataplaneKey(odd, odd), resource });
      });

      it('wakes its readers after an append', async () => {
        const woken = firstValueFrom(log.wakeups);
        await log.append([{ kind: 'upserted', resource: mesh('default') }], author);
        await expect(woken).resolves.toBeUndefined();
      });
    });

    describe('versions', () => {
      it('counts a key’s events: 1 on create, +1 on each upsert and on delete, continuing after a re-create', async () => {
        const write = { kind: 'upserted', resource: mesh('m') } as const;
        await log.append([write], author);
        await log.append([write], author);
        await log.append([{ kind: 'deleted', key: meshKey('m') }], author);
        await log.append([write], author);
        expect((await readAll()).map((event) => [event.kind, event.version])).toEqual([
          ['upserted', 1],
          ['upserted', 2],
          ['deleted', 3],
          ['upserted', 4],
        ]);
      });

      it('keeps versions per key', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
        await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
        const [event] = await log.append([{ kind: 'upserted', resource: mesh('b') }], author);
        expect(event!.version).toBe(1);
      });

      it('appends a write whose expected version is the current one', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        const [event] = await log.append([{ kind: 'upserted', resource: mesh('m'), expected: v(1) }], author);
        expect(event!.version).toBe(2);
        await log.append([{ kind: 'deleted', key: meshKey('m'), expected: v(2) }], author);
        expect(await readAll()).toHaveLength(3);
      });

      it('rejects a stale expected version with the key, the expected and the actual version', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        const attempt = log.append([{ kind: 'upserted', resource: mesh('m'), expected: v(1) }], author);
        await expect(attempt).rejects.toBeInstanceOf(VersionConflictError);
        await expect(attempt).rejects.toMatchObject({ key: meshKey('m'), expected: 1, actual: 2 });
        expect(await readAll()).toHaveLength(2);
      });

      it('rejects a stale expected version on delete', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        const attempt = log.append([{ kind: 'deleted', key: meshKey('m'), expected: v(1) }], author);
        await expect(attempt).rejects.toMatchObject({ code: 'CHANCERY_STORE_VERSION_CONFLICT', expected: 1, actual: 2 });
      });

      it('rejects an expected version for a key that does not exist, as actual absent', async () => {
        const attempt = log.append([{ kind: 'upserted', resource: mesh('m'), expected: v(1) }], author);
        await expect(attempt).rejects.toMatchObject({ code: 'CHANCERY_STORE_VERSION_CONFLICT', expected: 1, actual: 'absent' });
        expect(await readAll()).toEqual([]);
      });

      it('accepts absent for a key never written or deleted, and rejects it for a live one', async () => {
        const createOnly = { kind: 'upserted', resource: mesh('m'), expected: 'absent' } as const;
        await log.append([createOnly], author);
        await expect(log.append([createOnly], author)).rejects.toMatchObject({ expected: 'absent', actual: 1 });
        await log.append([{ kind: 'deleted', key: meshKey('m') }], author);
        const [recreated] = await log.append([createOnly], author);
        expect(recreated!.version).toBe(3);
      });

      it('rejects deleting a key that does not exist with NotFoundError and appends nothing', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        await log.append([{ kind: 'deleted', key: meshKey('m') }], author);
        const attempt = log.append([{ kind: 'deleted', key: meshKey('m') }], author);
        await expect(attempt).rejects.toBeInstanceOf(NotFoundError);
        await expect(attempt).rejects.toMatchObject({ key: meshKey('m') });
        expect(await readAll()).toHaveLength(2);
      });
    });

    describe('batches', () => {
      it('appends nothing from a batch in which one write conflicts', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        const attempt = log.append(
          [
            { kind: 'upserted', resource: mesh('other') },
            { kind: 'upserted', resource: mesh('m'), expected: 'absent' },
          ],
          author,
        );
        await expect(attempt).rejects.toBeInstanceOf(VersionConflictError);
        expect(await readAll()).toHaveLength(1);
        // The rejected batch left no version behind: `other` is still absent.
        const [other] = await log.append([{ kind: 'upserted', resource: mesh('other'), expected: 'absent' }], author);
        expect(other!.version).toBe(1);
      });

      it('appends nothing from a batch that deletes a missing key', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        const attempt = log.append(
          [
            { kind: 'deleted', key: meshKey('m') },
            { kind: 'deleted', key: meshKey('missing') },
          ],
          author,
        );
        await expect(attempt).rejects.toBeInstanceOf(NotFoundError);
        expect(await readAll()).toHaveLength(1);
      });

      it('checks each write of a batch against the writes before it in the batch', async () => {
        const events = await log.append(
          [
            { kind: 'upserted', resource: mesh('m'), expected: 'absent' },
            { kind: 'upserted', resource: mesh('m'), expected: v(1) },
            { kind: 'deleted', key: meshKey('m'), expected: v(2) },
          ],
          author,
        );
        expect(events.map((event) => event.version)).toEqual([1, 2, 3]);
        const deleteTwice = log.append([{ kind: 'deleted', key: meshKey('m') }, { kind: 'deleted', key: meshKey('m') }], author);
        await expect(deleteTwice).rejects.toBeInstanceOf(NotFoundError);
      });

      it('gives a batch’s events the order of its writes', async () => {
        const events = await log.append(
          [
            { kind: 'upserted', resource: mesh('m') },
            { kind: 'upserted', resource: dataplane('m', 'z') },
            { kind: 'upserted', resource: dataplane('m', 'a') },
          ],
          author,
        );
        expect(events.map((event) => event.key.name)).toEqual(['m', 'z', 'a']);
        expect(events[0]!.seq).toBeLessThan(events[1]!.seq);
        expect(events[1]!.seq).toBeLessThan(events[2]!.seq);
      });
    });

    it('rejects reads and appends with StoreUnavailableError once closed', async () => {
      await log.close();
      await expect(log.readAfter(asSeq(0), 10)).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(log.append([{ kind: 'upserted', resource: mesh('a') }], author)).rejects.toBeInstanceOf(StoreUnavailableError);
    });

    it('lets exactly one of two concurrent writers with the same expected version win', async () => {
      await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
      const results = await Promise.allSettled([
        log.append([{ kind: 'upserted', resource: mesh('m'), expected: v(1) }], { instance: 'one' }),
        log.append([{ kind: 'upserted', resource: mesh('m'), expected: v(1) }], { instance: 'two' }),
      ]);
      expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
      const [rejected] = results.filter((result) => result.status === 'rejected');
      expect(rejected?.reason).toBeInstanceOf(VersionConflictError);
      expect(rejected?.reason).toMatchObject({ expected: 1, actual: 2 });
      expect(await readAll()).toHaveLength(2);
    });
  });
}
