import fc from 'fast-check';
import { firstValueFrom, NEVER } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Dataplane, Valid } from '../../src/mesh/resources.js';
import { validate } from '../../src/mesh/validate.js';
import { ChangeFeed } from '../../src/store/change-feed.js';
import { compact } from '../../src/store/compaction.js';
import { MeshNotFoundError, NotFoundError, RevisionCompactedError, StoreUnavailableError, VersionConflictError } from '../../src/store/errors.js';
import { applyEvents, emptyProjection, projectionOf } from '../../src/store/projection.js';
import { asResourceVersion, asSeq, type EventLog, type ResourceEvent, type Retention } from '../../src/store/types.js';
import { fuzz } from '../support/fuzz.js';
import { apiToken, author, signingKey, dataplane, dataplaneKey, mesh, meshKey } from './fixtures.js';

const v = asResourceVersion;

/** Any text: well-formed in every script, or with the NULs, controls and lone surrogates a hostile body holds. */
const TEXT = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.stringMatching(/^[\u0000\u0001\u007f\u0085\ud800\udfff a-z]{0,8}$/),
);
const TAGS = fc.dictionary(TEXT, TEXT, { maxKeys: 6 });

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

      it('keeps exactly every resource validation accepts, whatever text its tags hold (issue 11)', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('default') }], author);
        let kept = 0;
        await fuzz(
          fc.asyncProperty(TAGS, async (tags) => {
            const result = validate({ ...dataplane('default', 'tagged'), networking: { address: '10.0.0.1', inbound: [{ port: 1, tags: { ...tags, service: 'backend' } }] } });
            // Refused by validation, so on every store alike: nothing reaches the log.
            if (!result.ok) return;
            const [event] = await log.append([{ kind: 'upserted', resource: result.resource }], author);
            expect(await log.readAfter(asSeq(event!.seq - 1), 1)).toEqual([event]);
            expect(event).toMatchObject({ resource: result.resource });
            kept += 1;
          }),
          { runs: 60 },
        );
        // The generators make both kinds; a property that only saw refusals would prove nothing.
        expect(kept).toBeGreaterThan(0);
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

    describe('writes identical to the head (identicalTo)', () => {
      it('appends nothing for an upsert identical to the head, and keeps its version', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        expect(await log.append([{ kind: 'upserted', resource: mesh('m'), identicalTo: v(1), expected: v(1) }], author)).toEqual([]);
        expect(await readAll()).toHaveLength(1);
        const [next] = await log.append([{ kind: 'upserted', resource: mesh('m'), expected: v(1) }], author);
        expect(next!.version).toBe(2);
      });

      it('appends the upsert once the head moved past the version it was identical to', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        await log.append([{ kind: 'deleted', key: meshKey('m') }], author);
        const [recreated] = await log.append([{ kind: 'upserted', resource: mesh('m'), identicalTo: v(1) }], author);
        expect(recreated!.version).toBe(3);
      });

      it('still checks the expected version of an identical write first', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        const attempt = log.append([{ kind: 'upserted', resource: mesh('m'), identicalTo: v(1), expected: 'absent' }], author);
        await expect(attempt).rejects.toMatchObject({ code: 'CHANCERY_STORE_VERSION_CONFLICT', expected: 'absent', actual: 1 });
      });

      it('appends the rest of a batch, and only the rest, when one of its writes is identical', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        const events = await log.append(
          [
            { kind: 'upserted', resource: mesh('m'), identicalTo: v(1) },
            { kind: 'upserted', resource: dataplane('m', 'a') },
          ],
          author,
        );
        expect(events.map((event) => [event.seq, event.key.name, event.version])).toEqual([[2, 'a', 1]]);
      });
    });

    describe('appending at a revision (atRevision)', () => {
      it('appends a batch at the revision the log is at, and refuses it once the log moved, appending nothing', async () => {
        const [first] = await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        const [second] = await log.append([{ kind: 'upserted', resource: mesh('n') }], author, { atRevision: first!.seq });
        expect(second!.seq).toBe(first!.seq + 1);
        const attempt = log.append([{ kind: 'upserted', resource: mesh('o') }], author, { atRevision: first!.seq });
        await expect(attempt).rejects.toMatchObject({ code: 'CHANCERY_STORE_REVISION_MOVED', expected: first!.seq, actual: second!.seq });
        expect(await readAll()).toHaveLength(2);
      });

      it('refuses the second of two batches checked at the same revision when they are appended together', async () => {
        const [first] = await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        const results = await Promise.allSettled([
          log.append([{ kind: 'upserted', resource: mesh('a') }], author, { atRevision: first!.seq }),
          log.append([{ kind: 'upserted', resource: mesh('b') }], author, { atRevision: first!.seq }),
        ]);
        expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);
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

      it('deletes the Dataplanes live in a Mesh with it, in the same batch, before it and by name', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }, { kind: 'upserted', resource: mesh('other') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'z') }, { kind: 'upserted', resource: dataplane('m', 'a') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'gone') }], author);
        await log.append([{ kind: 'deleted', key: dataplaneKey('m', 'gone') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('other', 'kept') }], author);
        const events = await log.append([{ kind: 'deleted', key: meshKey('m') }], { instance: 'cp-2' });
        expect(events.map((event) => [event.kind, event.key.type, event.key.name, event.version])).toEqual([
          ['deleted', 'Dataplane', 'a', 2],
          ['deleted', 'Dataplane', 'z', 2],
          ['deleted', 'Mesh', 'm', 2],
        ]);
        expect(new Set(events.map((event) => event.at)).size).toBe(1);
        expect(events.every((event) => event.by.instance === 'cp-2')).toBe(true);
        // The dataplanes are gone from the log's heads too: re-creating one is a create.
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        const [recreated] = await log.append([{ kind: 'upserted', resource: dataplane('m', 'a'), expected: 'absent' }], author);
        expect(recreated!.version).toBe(3);
      });

      it('deletes the keys of a Mesh with it, as its Dataplanes, and keeps global resources of the same name', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        await log.append([{ kind: 'upserted', resource: signingKey('m', 'k1') }, { kind: 'upserted', resource: dataplane('m', 'a') }, { kind: 'upserted', resource: apiToken('m') }], author);
        const events = await log.append([{ kind: 'deleted', key: meshKey('m') }], author);
        expect(events.map((event) => [event.kind, event.key.type, event.key.name])).toEqual([
          ['deleted', 'Dataplane', 'a'],
          ['deleted', 'SigningKey', 'k1'],
          ['deleted', 'Mesh', 'm'],
        ]);
        await expect(log.append([{ kind: 'upserted', resource: signingKey('m', 'k2') }], author)).rejects.toMatchObject({ code: 'CHANCERY_STORE_MESH_NOT_FOUND', mesh: 'm' });
        const [token] = await log.append([{ kind: 'upserted', resource: apiToken('m') }], author);
        expect(token!.version).toBe(2);
      });

      it('deletes with a Mesh the Dataplanes written earlier in the same batch, and not those deleted in it', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }, { kind: 'upserted', resource: dataplane('m', 'old') }], author);
        const events = await log.append(
          [
            { kind: 'upserted', resource: dataplane('m', 'new') },
            { kind: 'deleted', key: dataplaneKey('m', 'old') },
            { kind: 'deleted', key: meshKey('m') },
          ],
          author,
        );
        expect(events.map((event) => [event.kind, event.key.name])).toEqual([
          ['upserted', 'new'],
          ['deleted', 'old'],
          ['deleted', 'new'],
          ['deleted', 'm'],
        ]);
      });

      it('refuses a Dataplane whose Mesh is not live in the log, appending nothing', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        await expect(log.append([{ kind: 'upserted', resource: dataplane('nowhere', 'a') }], author)).rejects.toMatchObject({
          code: 'CHANCERY_STORE_MESH_NOT_FOUND',
          mesh: 'nowhere',
          key: dataplaneKey('nowhere', 'a'),
        });
        const attempt = log.append(
          [
            { kind: 'upserted', resource: mesh('other') },
            { kind: 'deleted', key: meshKey('m') },
            { kind: 'upserted', resource: dataplane('m', 'a') },
          ],
          author,
        );
        await expect(attempt).rejects.toBeInstanceOf(MeshNotFoundError);
        expect(await readAll()).toHaveLength(1);
        const [created] = await log.append([{ kind: 'upserted', resource: mesh('n') }, { kind: 'upserted', resource: dataplane('n', 'a') }], author);
        expect(created!.key.name).toBe('n');
      });

      it('marks each event with its batch: the seq of the first event its append wrote', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'a') }, { kind: 'upserted', resource: dataplane('m', 'b') }], author);
        const events = await readAll();
        expect(events.map((event) => [event.seq, event.batch])).toEqual([
          [1, 1],
          [2, 2],
          [3, 2],
        ]);
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

    describe('history', () => {
      /** Mesh m; dataplanes a and b; a changed; a deleted; a re-created: seqs 1–6. */
      async function writeHistory(): Promise<void> {
        await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'a') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'b') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'a', 20001) }], { instance: 'cp-2', caller: 'alice' });
        await log.append([{ kind: 'deleted', key: dataplaneKey('m', 'a') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'a', 30001) }], author);
      }

      it('reads one key’s events in sequence order, and no other key’s', async () => {
        await writeHistory();
        const { horizon, events } = await log.readKey(dataplaneKey('m', 'a'), asSeq(0), 100);
        expect(horizon).toBe(0);
        expect(events.map((event) => [event.seq, event.kind, event.version])).toEqual([
          [2, 'upserted', 1],
          [4, 'upserted', 2],
          [5, 'deleted', 3],
          [6, 'upserted', 4],
        ]);
        expect(events[1]).toMatchObject({ by: { instance: 'cp-2', caller: 'alice' }, resource: dataplane('m', 'a', 20001) });
        expect(events).toEqual((await readAll()).filter((event) => event.key.type === 'Dataplane' && event.key.name === 'a'));
      });

      it('reads a key’s events after a seq, at most limit of them', async () => {
        await writeHistory();
        const { events } = await log.readKey(dataplaneKey('m', 'a'), asSeq(2), 2);
        expect(events.map((event) => event.seq)).toEqual([4, 5]);
      });

      it('keeps a Mesh’s history apart from a Dataplane’s of the same name', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('x') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('x', 'x') }], author);
        expect((await log.readKey(meshKey('x'), asSeq(0), 10)).events.map((event) => event.seq)).toEqual([1]);
        expect((await log.readKey(dataplaneKey('x', 'x'), asSeq(0), 10)).events.map((event) => event.seq)).toEqual([2]);
        expect(await log.readKey(dataplaneKey('x', 'never'), asSeq(0), 10)).toEqual({ horizon: 0, events: [] });
      });

      it('answers a resource as it was at each revision: absent before it existed and after its delete', async () => {
        await writeHistory();
        const key = dataplaneKey('m', 'a');
        const at = async (revision: number) => (await log.readAt(key, asSeq(revision)))?.resource;
        expect(await at(0)).toBeUndefined();
        expect(await at(1)).toBeUndefined();
        expect(await at(2)).toEqual(dataplane('m', 'a'));
        expect(await at(3)).toEqual(dataplane('m', 'a'));
        expect(await at(4)).toEqual(dataplane('m', 'a', 20001));
        expect(await at(5)).toBeUndefined();
        expect(await at(6)).toEqual(dataplane('m', 'a', 30001));
      });

      it('answers with the version, seq and time of the event that wrote it', async () => {
        await writeHistory();
        const [, , , fourth] = await readAll();
        expect(await log.readAt(dataplaneKey('m', 'a'), asSeq(4))).toEqual({
          resource: dataplane('m', 'a', 20001),
          version: 2,
          seq: 4,
          updatedAt: fourth!.at,
        });
        expect((await log.readAt(meshKey('m'), asSeq(6)))?.version).toBe(1);
      });

      it('answers a revision past the end of the log as of its end', async () => {
        await writeHistory();
        expect((await log.readAt(dataplaneKey('m', 'a'), asSeq(1_000)))?.version).toBe(4);
      });
    });

    describe('checkpoints', () => {
      const keys = [meshKey('m'), dataplaneKey('m', 'a'), dataplaneKey('m', 'b'), meshKey('n'), dataplaneKey('n', 'c')];

      /** 10 events over five keys, with a delete, a re-create and a Mesh delete cascade. */
      async function writeHistory(): Promise<void> {
        await log.append([{ kind: 'upserted', resource: mesh('m') }, { kind: 'upserted', resource: mesh('n') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'a') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'b') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('n', 'c') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'a', 20001) }], author);
        await log.append([{ kind: 'deleted', key: dataplaneKey('n', 'c') }, { kind: 'deleted', key: meshKey('n') }], author);
        await log.append([{ kind: 'upserted', resource: dataplane('m', 'b', 20002) }], author);
        await log.append([{ kind: 'upserted', resource: mesh('n') }], author);
      }

      async function everyAnswer(): Promise<Map<string, unknown>> {
        const answers = new Map<string, unknown>();
        for (let revision = 0; revision <= 10; revision += 1) {
          for (const key of keys) answers.set(`${key.type} ${key.name}@${revision}`, await log.readAt(key, asSeq(revision)));
        }
        return answers;
      }

      const compactTo = (retention: Retention, now = new Date()) =>
        compact(log, retention, { head: asSeq(10), now, author, pageSize: 3 });

      it('has none until one is written', async () => {
        await writeHistory();
        expect(await log.readCheckpoint()).toEqual({ seq: 0, resources: [] });
      });

      it('keeps the fold of the compacted events and only the events after it', async () => {
        await writeHistory();
        const all = await readAll();
        expect(await compactTo({ events: 3 })).toEqual({ previous: 0, horizon: 7 });
        const checkpoint = await log.readCheckpoint();
        expect(checkpoint.seq).toBe(7);
        // A checkpoint keeps the resources, not when its last event was written (`at`).
        expect(projectionOf(checkpoint)).toEqual({ ...applyEvents(emptyProjection(), all.slice(0, 7)), at: undefined });
        expect(await log.readAfter(asSeq(7), 100)).toEqual(all.slice(7));
      });

      it('refuses to read events from before the checkpoint, naming the revision and the horizon', async () => {
        await writeHistory();
        await compactTo({ events: 3 });
        const attempt = log.readAfter(asSeq(6), 100);
        await expect(attempt).rejects.toBeInstanceOf(RevisionCompactedError);
        await expect(attempt).rejects.toMatchObject({ code: 'CHANCERY_STORE_REVISION_COMPACTED', revision: 6, horizon: 7 });
      });

      it('answers what each resource looked like at every revision from the checkpoint on, as before compaction', async () => {
        await writeHistory();
        const before = await everyAnswer();
        await compactTo({ events: 4 });
        await compactTo({ events: 2 });
        expect((await log.readCheckpoint()).seq).toBe(8);
        for (let revision = 8; revision <= 10; revision += 1) {
          for (const key of keys) {
            const label = `${key.type} ${key.name}@${revision}`;
            expect(await log.readAt(key, asSeq(revision)), label).toEqual(before.get(label));
          }
        }
        await expect(log.readAt(dataplaneKey('m', 'a'), asSeq(7))).rejects.toMatchObject({ revision: 7, horizon: 8 });
      });

      it('reads a key’s retained history after the checkpoint, with the horizon', async () => {
        await writeHistory();
        await compactTo({ events: 4 });
        expect(await log.readKey(dataplaneKey('m', 'b'), asSeq(0), 100)).toMatchObject({ horizon: 6, events: [{ seq: 9, version: 2 }] });
        expect(await log.readKey(dataplaneKey('m', 'a'), asSeq(0), 100)).toEqual({ horizon: 6, events: [] });
      });

      it('carries on sequence numbers and versions after a compaction that took every event', async () => {
        await writeHistory();
        const future = new Date(Date.now() + 86_400_000);
        expect(await compactTo({ maxAge: 1_000 }, future)).toEqual({ previous: 0, horizon: 10 });
        expect(await log.readAfter(asSeq(10), 100)).toEqual([]);
        expect((await log.readAt(dataplaneKey('m', 'a'), asSeq(10)))?.version).toBe(2);
        const [event] = await log.append([{ kind: 'upserted', resource: dataplane('m', 'a', 40001), expected: v(2) }], author);
        expect(event).toMatchObject({ seq: 11, version: 3 });
        await expect(log.append([{ kind: 'upserted', resource: mesh('m'), expected: 'absent' }], author)).rejects.toBeInstanceOf(
          VersionConflictError,
        );
      });

      it('compacts nothing when every event is within the age kept', async () => {
        await writeHistory();
        const past = new Date(Date.now() - 86_400_000);
        expect(await compactTo({ maxAge: 1_000 }, past)).toEqual({ previous: 0, horizon: 0 });
        expect(await readAll()).toHaveLength(10);
      });

      it('ignores a checkpoint at or before the one it has', async () => {
        await writeHistory();
        await compactTo({ events: 2 });
        const older = { seq: asSeq(5), resources: [] };
        expect(await log.writeCheckpoint(older, author)).toBe(8);
        expect((await log.readCheckpoint()).seq).toBe(8);
        expect((await log.readCheckpoint()).resources.length).toBeGreaterThan(0);
      });

      it('refuses a checkpoint past the end of the log', async () => {
        await writeHistory();
        await expect(log.writeCheckpoint({ seq: asSeq(11), resources: [] }, author)).rejects.toThrow(/past the end of the log/);
        expect(await readAll()).toHaveLength(10);
      });
    });

    describe('folded once (I7): a read that hands back events already applied changes nothing they did', () => {
      it('keeps a deleted dataplane deleted and the revision where it was when a read goes back over the log', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('a') }, { kind: 'upserted', resource: dataplane('a', 'x') }], author);
        await log.append([{ kind: 'upserted', resource: mesh('b') }], author);
        await log.append([{ kind: 'deleted', key: dataplaneKey('a', 'x') }], author);
        const applied = applyEvents(emptyProjection(), await readAll());
        expect(applied.revision).toBe(4);
        // A retried page, or a reader that lagged: events 2 and 3 again, after 4.
        const replayed = applyEvents(applied, await log.readAfter(asSeq(1), 2));
        expect(replayed.revision).toBe(4);
        expect(replayed.meshes.get('a')!.dataplanes.has('x')).toBe(false);
        expect(replayed).toBe(applied);

        await log.append([{ kind: 'upserted', resource: mesh('c') }], author);
        const next = applyEvents(applied, await log.readAfter(asSeq(1), 100));
        expect(next.revision).toBe(5);
        expect(next.meshes.get('a')!.dataplanes.has('x')).toBe(false);
        // Only what event 5 touched is new: consumers memoise on the objects of the rest.
        expect(next.meshes.get('a')).toBe(applied.meshes.get('a'));
        expect(next.meshes.get('b')).toBe(applied.meshes.get('b'));
        expect([...next.meshes.keys()]).toEqual(['a', 'b', 'c']);
      });

      it('lets a change feed whose reads overlap what it applied emit only what is new', async () => {
        await log.append([{ kind: 'upserted', resource: mesh('a') }, { kind: 'upserted', resource: dataplane('a', 'x') }], author);
        // Every read starts one event early, as an at-least-once source may deliver.
        const overlapping = new Proxy(log, {
          get(target, property) {
            if (property === 'readAfter') return (after: number, limit: number) => target.readAfter(asSeq(Math.max(0, after - 1)), limit);
            const value = Reflect.get(target, property, target);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        const feed = new ChangeFeed(overlapping, { resync: NEVER, pageSize: 3 });
        await feed.start();
        const before = feed.projection;
        const revisions: number[] = [];
        feed.projections.subscribe((projection) => revisions.push(projection.revision));

        await log.append([{ kind: 'upserted', resource: mesh('b') }], author);
        const after = await feed.refresh();
        await log.append([{ kind: 'deleted', key: dataplaneKey('a', 'x') }], author);
        const deleted = await feed.refresh();
        await log.append([{ kind: 'upserted', resource: mesh('c') }], author);
        const last = await feed.refresh();
        await feed.stop();

        expect(revisions).toEqual([2, 3, 4, 5]);
        // Event 2 (dataplane x) came back with event 3: mesh a is as it was, object and all.
        expect(after.meshes.get('a')).toBe(before.meshes.get('a'));
        expect(deleted.meshes.get('a')!.dataplanes.has('x')).toBe(false);
        expect(last.meshes.get('a')).toBe(deleted.meshes.get('a'));
        expect(last).toEqual({ ...applyEvents(emptyProjection(), await readAll()), at: last.at });
      });
    });

    it('rejects reads and appends with StoreUnavailableError once closed', async () => {
      await log.close();
      await expect(log.readAfter(asSeq(0), 10)).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(log.append([{ kind: 'upserted', resource: mesh('a') }], author)).rejects.toBeInstanceOf(StoreUnavailableError);
    });

    it('settles concurrent appends each on its own: one that fails leaves the others appended, in call order', async () => {
      await log.append([{ kind: 'upserted', resource: mesh('m') }], author);
      const results = await Promise.allSettled([
        log.append([{ kind: 'upserted', resource: mesh('a') }], { instance: 'one' }),
        log.append([{ kind: 'upserted', resource: mesh('b') }, { kind: 'upserted', resource: mesh('m'), expected: 'absent' }], { instance: 'two' }),
        log.append([{ kind: 'deleted', key: meshKey('m') }], { instance: 'three', caller: 'carol' }),
        log.append([{ kind: 'upserted', resource: dataplane('m', 'late') }], { instance: 'four' }),
        log.append([{ kind: 'upserted', resource: mesh('a'), expected: v(1) }], { instance: 'five' }),
      ]);
      expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(VersionConflictError);
      expect((results[3] as PromiseRejectedResult).reason).toBeInstanceOf(MeshNotFoundError);
      const events = await readAll();
      expect(events.map((event) => [event.seq, event.key.name, event.version, event.by.instance])).toEqual([
        [1, 'm', 1, 'test'],
        [2, 'a', 1, 'one'],
        [3, 'm', 2, 'three'],
        [4, 'a', 2, 'five'],
      ]);
      expect(events[2]!.by).toEqual({ instance: 'three', caller: 'carol' });
      const [fifth] = (results[4] as PromiseFulfilledResult<readonly ResourceEvent[]>).value;
      expect(fifth).toEqual(events[3]);
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
