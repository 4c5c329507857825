import { expect } from 'vitest';
import type { EventJson } from '../../src/api/index.js';
import { RESTART_HISTORY } from '../store/fixtures.js';
import { allEvents, call, type ChanceryProcess, startChancery } from './chancery-process.js';

/**
 * The durability scenarios of issue 3, run against `chancery run` child processes for each
 * SQL backend (pglite-durability.test.ts, postgres-durability.test.ts). `store` is the value
 * of `--store`: a fresh, empty database.
 */

const dataplane = (name: string, port: number) => ({
  networking: { address: '127.0.0.1', inbound: [{ port, tags: { service: name } }] },
});

/**
 * Writes over HTTP, stops with SIGTERM and starts again on the same store: the resources, the
 * log (`GET /events`) and past revisions (`?revision=`) are there. With `retention`, a start
 * with `--retention 3` then compacts on start, and a start without it rebuilds from the
 * checkpoint (the SQL is the same for both backends, so one runs it: each start costs seconds).
 */
export async function restartScenario(store: string, options: { readonly retention: boolean }): Promise<void> {
  const start = (...args: string[]) => startChancery(['--store', store, ...args]);

  // 1. Write over HTTP: seqs 1 (Mesh default) to 6.
  const first = await start('--instance-id', 'first');
  const dp = (name: string) => `${first.url}/meshes/payments/dataplanes/${name}`;
  expect((await call(`${first.url}/meshes/payments`, 'PUT', {})).status).toBe(201);
  expect((await call(dp('a'), 'PUT', dataplane('a', 10001))).status).toBe(201);
  expect((await call(dp('a'), 'PUT', dataplane('a', 20001), { 'if-match': '"1"' })).status).toBe(200);
  expect((await call(dp('b'), 'PUT', dataplane('b', 10002))).status).toBe(201);
  expect((await call(dp('b'), 'DELETE')).status).toBe(204);
  const history = await allEvents(first.url);
  expect(history.map((event) => [event.seq, event.kind, event.name, event.version])).toEqual(RESTART_HISTORY);
  const aAtThree = await call(`${dp('a')}?revision=3`, 'GET');
  expect(aAtThree.body).toMatchObject({ version: 1, networking: { inbound: [{ port: 10001 }] } });
  const current = (await call(`${first.url}/meshes/payments/dataplanes`, 'GET')).body;
  expect(await first.stop()).toBe(0);

  // 2. Started again: the same resources, the same log, the same answers for past revisions.
  const second = await start('--instance-id', 'second');
  expect((await call(`${second.url}/meshes/payments/dataplanes`, 'GET')).body).toEqual(current);
  expect((await call(`${second.url}/meshes/payments/dataplanes/b`, 'GET')).status).toBe(404);
  expect(await allEvents(second.url)).toEqual(history);
  expect(await call(`${second.url}/meshes/payments/dataplanes/a?revision=3`, 'GET')).toEqual(aAtThree);
  expect((await call(`${second.url}/meshes/payments/dataplanes/b?revision=5`, 'GET')).body).toMatchObject({ version: 1 });
  expect((await call(`${second.url}/meshes/payments/dataplanes/a/history`, 'GET')).body.items).toEqual(history.slice(2, 4));
  expect((await call(`${second.url}/meshes/extra`, 'PUT', {})).status).toBe(201);
  expect(await allEvents(second.url, 6)).toMatchObject([{ seq: 7, name: 'extra', by: { instance: 'second' } }]);
  const all = await allEvents(second.url);
  expect(await second.stop()).toBe(0);
  if (!options.retention) return;

  // 3. With --retention 3, the start compacts seqs 1–4 into a checkpoint: they are gone, the rest answers as before.
  const third = await start('--instance-id', 'third', '--retention', '3');
  expect(third.output()).toContain('"msg":"event log compacted"');
  const gone = await call(`${third.url}/events?after=0`, 'GET');
  expect(gone).toMatchObject({ status: 410, body: { code: 'CHANCERY_STORE_REVISION_COMPACTED' } });
  expect(gone.body.reason).toContain('starts at revision 4');
  expect((await call(`${third.url}/meshes/payments/dataplanes/a?revision=3`, 'GET')).status).toBe(410);
  expect(await allEvents(third.url, 4)).toEqual(all.slice(4));
  expect((await call(`${third.url}/meshes/payments/dataplanes/a?revision=4`, 'GET')).body).toMatchObject({ version: 2 });
  expect((await call(`${third.url}/meshes/payments/dataplanes/b?revision=5`, 'GET')).body).toMatchObject({ version: 1 });
  expect((await call(`${third.url}/meshes/payments/dataplanes`, 'GET')).body).toEqual(current);
  expect(await third.stop()).toBe(0);

  // 4. Without --retention: rebuilt from the newest checkpoint plus the events after it.
  const fourth = await start('--instance-id', 'fourth');
  expect((await call(`${fourth.url}/meshes/payments/dataplanes`, 'GET')).body).toEqual(current);
  expect((await call(`${fourth.url}/meshes`, 'GET')).body.items.map((mesh: { name: string }) => mesh.name)).toEqual(['default', 'extra', 'payments']);
  expect(await allEvents(fourth.url, 4)).toEqual(all.slice(4));
  expect((await call(`${fourth.url}/meshes/payments/dataplanes/a/history`, 'GET')).body).toEqual({ items: [], next: 0, compactedThrough: 4 });
  expect((await call(`${fourth.url}/meshes/payments/dataplanes/a`, 'PUT', dataplane('a', 30001), { 'if-match': '"2"' })).body).toMatchObject({ version: 3 });
  expect(await allEvents(fourth.url, 7)).toMatchObject([{ seq: 8, name: 'a', version: 3 }]);
  expect(await fourth.stop()).toBe(0);
}

const MESHES = ['m0', 'm1', 'm2', 'm3'];
const WRITERS = 12;
/** Acknowledged writes before the kill: the burst is well under way, with writes in flight. */
const KILL_AFTER = 150;

/** What the client was told: a write it must find in the log, or one it must not. */
type Outcome =
  | { readonly kind: 'upserted'; readonly mesh: string; readonly name: string; readonly version: number; readonly port: number }
  | { readonly kind: 'mesh-deleted'; readonly mesh: string }
  | { readonly kind: 'refused'; readonly mesh: string; readonly name: string };

/**
 * WRITERS clients write as fast as they are answered: mostly new Dataplanes into the meshes,
 * and every ninth write of each a Mesh delete (a cascade over that mesh's dataplanes, one
 * batch) and its re-creation. Once KILL_AFTER writes are acknowledged, SIGKILL; each client
 * stops at its first request that gets no answer.
 */
async function burst(cp: ChanceryProcess): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let killing: Promise<void> | undefined;
  const acknowledged = () => outcomes.filter((outcome) => outcome.kind !== 'refused').length;
  const writer = async (w: number) => {
    for (let i = 0; ; i += 1) {
      const mesh = MESHES[(w + i) % MESHES.length]!;
      try {
        if (i % 9 === 8) {
          const deleted = await call(`${cp.url}/meshes/${mesh}`, 'DELETE');
          if (deleted.status === 204) outcomes.push({ kind: 'mesh-deleted', mesh });
          const created = await call(`${cp.url}/meshes/${mesh}`, 'PUT', {});
          if (created.status < 300) outcomes.push({ kind: 'upserted', mesh, name: mesh, version: created.body.version, port: 0 });
        } else {
          const name = `w${w}-${i}`;
          const port = 10_000 + w * 1_000 + i;
          const answer = await call(`${cp.url}/meshes/${mesh}/dataplanes/${name}`, 'PUT', {
            networking: { address: '127.0.0.1', inbound: [{ port, tags: { service: `svc-${w}` } }] },
          });
          if (answer.status < 300) outcomes.push({ kind: 'upserted', mesh, name, version: answer.body.version, port });
          // Its mesh was deleted meanwhile: refused, and so must not be in the log.
          else if (answer.status === 404) outcomes.push({ kind: 'refused', mesh, name });
          else throw new Error(`PUT ${mesh}/${name} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
        }
      } catch (error) {
        if (killing !== undefined) return; // no answer: the process is gone
        throw error;
      }
      if (killing === undefined && acknowledged() >= KILL_AFTER) killing = cp.kill();
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  await killing;
  return outcomes;
}

/**
 * Folds the log as the projection does and checks that each Mesh delete is whole: the test
 * deletes dataplanes only through their mesh, so every Dataplane delete must sit in a run of
 * them (one batch: one time, one author) that ends with the Mesh delete and covers exactly the
 * dataplanes live in it. Returns the live dataplanes by mesh.
 */
function foldCheckingCascades(events: readonly EventJson[]): Map<string, Set<string>> {
  const live = new Map<string, Set<string>>();
  for (let i = 0; i < events.length; i += 1) {
    const event = events[i]!;
    const label = `event ${event.seq} (${event.kind} ${event.type} ${event.mesh}/${event.name})`;
    if (event.type === 'Mesh' && event.kind === 'upserted') {
      if (!live.has(event.mesh)) live.set(event.mesh, new Set());
    } else if (event.type === 'Dataplane' && event.kind === 'upserted') {
      expect(live.has(event.mesh), `${label}: a Dataplane in a mesh that does not exist`).toBe(true);
      live.get(event.mesh)!.add(event.name);
    } else {
      let end = i;
      while (events[end]?.type === 'Dataplane' && events[end]?.kind === 'deleted') end += 1;
      const meshDelete = events[end];
      expect(meshDelete, `${label}: the log ends inside a Mesh delete`).toBeDefined();
      expect([meshDelete!.kind, meshDelete!.type, meshDelete!.name], `${label}: not followed by its Mesh delete`).toEqual([
        'deleted',
        'Mesh',
        event.mesh,
      ]);
      const batch = events.slice(i, end + 1);
      expect(new Set(batch.map((e) => `${e.at} ${e.by.instance} ${e.mesh}`)).size, `${label}: the cascade is not one batch`).toBe(1);
      const deleted = batch.slice(0, -1).map((e) => e.name);
      expect(deleted.sort(), `${label}: the cascade does not cover the mesh`).toEqual([...(live.get(event.mesh) ?? [])].sort());
      live.delete(event.mesh);
      i = end;
    }
  }
  return live;
}

/**
 * A burst of HTTP writes killed with SIGKILL: on restart every acknowledged write is in the log,
 * nothing refused is, and every Mesh delete is whole (one batch with its cascade).
 */
export async function crashScenario(store: string): Promise<void> {
  const first = await startChancery(['--store', store, '--instance-id', 'doomed']);
  for (const mesh of MESHES) expect((await call(`${first.url}/meshes/${mesh}`, 'PUT', {})).status).toBe(201);
  const outcomes = await burst(first);
  expect(outcomes.filter((outcome) => outcome.kind !== 'refused').length).toBeGreaterThanOrEqual(KILL_AFTER);

  const second = await startChancery(['--store', store, '--instance-id', 'survivor']);
  const events = await allEvents(second.url);
  const upserts = new Map(events.filter((e) => e.kind === 'upserted').map((e) => [`${e.type} ${e.mesh}/${e.name} v${e.version}`, e]));
  for (const outcome of outcomes) {
    if (outcome.kind === 'upserted') {
      const type = outcome.name === outcome.mesh ? 'Mesh' : 'Dataplane';
      const event = upserts.get(`${type} ${outcome.mesh}/${outcome.name} v${outcome.version}`);
      expect(event, `acknowledged ${type} ${outcome.mesh}/${outcome.name} v${outcome.version}`).toBeDefined();
      if (type === 'Dataplane') expect(event!.resource).toMatchObject({ networking: { inbound: [{ port: outcome.port }] } });
    } else if (outcome.kind === 'refused') {
      expect(events.filter((e) => e.name === outcome.name), `refused ${outcome.mesh}/${outcome.name}`).toEqual([]);
    }
  }
  const meshDeletes = (mesh: string) => events.filter((e) => e.type === 'Mesh' && e.kind === 'deleted' && e.mesh === mesh).length;
  for (const mesh of MESHES) {
    const acknowledged = outcomes.filter((outcome) => outcome.kind === 'mesh-deleted' && outcome.mesh === mesh).length;
    expect(meshDeletes(mesh), `Mesh ${mesh} deletes`).toBeGreaterThanOrEqual(acknowledged);
  }
  expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i + 1));

  // What the restarted instance serves is the fold of that log.
  const live = foldCheckingCascades(events);
  for (const [mesh, names] of live) {
    const { body } = await call(`${second.url}/meshes/${mesh}/dataplanes`, 'GET');
    expect(body.items.map((item: { name: string }) => item.name).sort(), `dataplanes of ${mesh}`).toEqual([...names].sort());
  }
  expect(await second.stop()).toBe(0);
}
