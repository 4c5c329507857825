import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PreviewAnswer } from '../../src/changes/index.js';
import { asSeq } from '../../src/store/index.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import { AdsStream } from '../support/ads-client.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { startTestPostgres, type TestPostgres } from '../store/test-postgres.js';
import { envoyDataplane } from '../xds/fixtures.js';

let postgres: TestPostgres;
beforeAll(async () => {
  postgres = await startTestPostgres();
});
afterAll(async () => {
  await postgres.stop();
});

let harness: Harness | undefined;
const streams: AdsStream[] = [];
afterEach(async () => {
  for (const stream of streams.splice(0)) stream.close();
  await harness?.stop();
  harness = undefined;
});

const STORES: ReadonlyArray<readonly [string, () => Promise<string>]> = [
  ['memory', async () => 'memory'],
  ['PGlite', async () => 'pglite:memory'],
  ['Postgres', () => postgres.newDatabase()],
];

async function send(method: string, route: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(`http://${harness!.api}${route}`, {
    method,
    ...(body !== undefined && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text), headers: response.headers };
}

/** web-1's Envoy, connected and ACKing: CDS and LDS wildcard, EDS for backend. */
async function connectWeb(): Promise<AdsStream> {
  const stream = AdsStream.open(harness!.xds);
  streams.push(stream);
  stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1' });
  stream.ack(await stream.nextResponse());
  stream.send({ typeUrl: ENDPOINT, resourceNames: ['backend'] });
  stream.ack(await stream.nextResponse(), ['backend']);
  stream.send({ typeUrl: LISTENER });
  stream.ack(await stream.nextResponse());
  return stream;
}

describe.each(STORES)('a dry run on the %s store', { timeout: 30_000 }, (_name, storeOf) => {
  it('answers what a PUT, a DELETE and a change would do, and appends nothing', async () => {
    harness = await startHarness({ store: await storeOf() });
    await harness.cp.apply(backendDataplane('backend-1', 10001));
    await harness.cp.apply(envoyDataplane('web-1'));
    const revision = harness.cp.store.projection.revision;

    const put = await send('PUT', '/meshes/default/dataplanes/backend-2?dryRun=true', backendDataplane('backend-2', 10003));
    expect(put.status).toBe(200);
    const preview = put.body as PreviewAnswer;
    expect(preview).toMatchObject({ dryRun: true, revision, items: [{ type: 'Dataplane', name: 'backend-2', outcome: 'created' }], warnings: [] });
    // backend-2 is new, and web-1 calls backend, which gains an endpoint; backend-1 is left as it was.
    expect(preview.summary).toMatchObject({ nodesAffected: 2, nodesUnchanged: 1 });
    expect(preview.nodes.items.map((node) => [node.node, node.dataplane, Object.keys(node.types)])).toEqual([
      ['default.backend-2', 'created', ['CDS', 'LDS']],
      ['default.web-1', 'kept', ['EDS']],
    ]);
    const eds = preview.nodes.items[1]!.types['EDS']!;
    expect(eds.changed.map((ref) => ref.name)).toEqual(['backend']);
    expect(preview.resources[eds.changed[0]!.version]).toMatchObject({ cluster_name: 'backend' });
    expect(preview.resources[eds.changed[0]!.was]).toMatchObject({ cluster_name: 'backend' });

    const deleted = await send('DELETE', '/meshes/default/dataplanes/backend-1?dryRun=true');
    expect(deleted.body).toMatchObject({ dryRun: true, items: [{ name: 'backend-1', outcome: 'deleted' }] });
    const change = await send('POST', '/apply?dryRun=true', { items: [backendDataplane('backend-2', 10003), { type: 'Mesh', name: 'payments' }] });
    // As the apply would write them: Meshes first.
    expect(change.body.items.map((item: { name: string; outcome: string }) => [item.name, item.outcome])).toEqual([
      ['payments', 'created'],
      ['backend-2', 'created'],
    ]);

    expect(await harness.cp.store.readEvents(asSeq(revision), 10)).toEqual([]);
    expect(harness.cp.store.projection.revision).toBe(revision);
    expect(harness.cp.get({ type: 'Dataplane', mesh: 'default', name: 'backend-2' })).toBeUndefined();
  });
});

describe('a dry run', () => {
  it('validates as the write would: a bad body, a stale version, a missing mesh are refused the same', async () => {
    harness = await startHarness();
    await harness.cp.apply(backendDataplane('backend-1', 10001));
    const invalid = await send('PUT', '/meshes/default/dataplanes/backend-2?dryRun=true', { networking: { address: 'nowhere' } });
    expect(invalid).toMatchObject({ status: 400, body: { code: 'CHANCERY_API_INVALID_RESOURCE', field: 'networking.address' } });
    const stale = await send('PUT', '/meshes/default/dataplanes/backend-1?dryRun=true', { ...backendDataplane('backend-1', 10009), version: 7 });
    expect(stale).toMatchObject({ status: 409, body: { code: 'CHANCERY_STORE_VERSION_CONFLICT' } });
    const noMesh = await send('PUT', '/meshes/nowhere/dataplanes/a?dryRun=true', backendDataplane('a', 10001, 'a', 'nowhere'));
    expect(noMesh).toMatchObject({ status: 404, body: { code: 'CHANCERY_STORE_MESH_NOT_FOUND' } });
    const missing = await send('DELETE', '/meshes/default/dataplanes/missing?dryRun=true');
    expect(missing).toMatchObject({ status: 404, body: { code: 'CHANCERY_STORE_NOT_FOUND' } });
    const item = await send('POST', '/apply?dryRun=true', { items: [backendDataplane('a', 10001), { type: 'Dataplane', mesh: 'default', name: 'b', networking: { address: '1.2.3.4', inbound: [{ port: 0, tags: { service: 'b' } }] } }] });
    expect(item).toMatchObject({ status: 400, body: { field: 'items[1].networking.inbound[0].port' } });
    const twice = await send('POST', '/apply?dryRun=true', { items: [backendDataplane('a', 10001), backendDataplane('a', 10002)] });
    expect(twice).toMatchObject({ status: 400, body: { field: 'items[1].name' } });
  });

  it('refuses a bad dryRun, and paging without dryRun, naming the parameter', async () => {
    harness = await startHarness();
    const bad = await send('PUT', '/meshes/default/dataplanes/a?dryRun=yes', backendDataplane('a', 10001));
    expect(bad).toMatchObject({ status: 400, body: { code: 'CHANCERY_API_INVALID_QUERY', field: 'dryRun' } });
    const paged = await send('PUT', '/meshes/default/dataplanes/a?limit=5', backendDataplane('a', 10001));
    expect(paged).toMatchObject({ status: 400, body: { field: 'limit' } });
    const unknown = await send('DELETE', '/meshes/default?dryrun=true');
    expect(unknown).toMatchObject({ status: 400, body: { field: 'dryrun' } });
    expect(harness.cp.list('Dataplane')).toEqual([]);
  });

  it('pages the affected nodes, and counts them all in its summary', async () => {
    harness = await startHarness();
    for (let i = 1; i <= 5; i++) await harness.cp.apply(envoyDataplane(`web-${i}`, { inbound: [], outbound: [{ port: 20001, service: 'backend' }] }));
    const page = await send('PUT', '/meshes/default/dataplanes/backend-1?dryRun=true&offset=1&limit=2', backendDataplane('backend-1', 10001));
    expect(page.body.summary).toMatchObject({ nodesAffected: 6, nodesUnchanged: 0 });
    expect(page.body.nodes).toMatchObject({ offset: 1, limit: 2, total: 6 });
    expect(page.body.nodes.items.map((node: { node: string }) => node.node)).toEqual(['default.web-1', 'default.web-2']);
  });

  it('shows what a connected Envoy holds now and would hold, as its stream subscribed', async () => {
    harness = await startHarness();
    await harness.cp.apply(backendDataplane('backend-1', 10001));
    await harness.cp.apply(envoyDataplane('web-1'));
    await connectWeb();
    const moved = envoyDataplane('web-1', { outbound: [{ port: 20002, service: 'backend' }] });
    const preview = (await send('PUT', '/meshes/default/dataplanes/web-1?dryRun=true', moved)).body as PreviewAnswer;
    expect(preview.nodes.items).toEqual([
      {
        node: 'default.web-1',
        dataplane: 'kept',
        connectedTo: ['test'],
        types: {
          LDS: {
            version: expect.any(String),
            added: [{ name: 'outbound:127.0.0.1:20002', version: expect.any(String) }],
            changed: [],
            removed: [{ name: 'outbound:127.0.0.1:20001', version: expect.any(String) }],
          },
        },
      },
    ]);
  });
});
