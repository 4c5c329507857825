import { afterEach, describe, expect, it } from 'vitest';
import type { EventsPage, HistoryPage } from '../../src/api/index.js';
import { type ApiHarness, BACKEND_1, BACKEND_1_CREATED, dataplaneBody, HISTORY_AT, putJson, startApi, writeHistory } from './api-harness.js';

let api: ApiHarness;

afterEach(async () => {
  await api?.close();
});


async function getJson<T = Record<string, unknown>>(path: string): Promise<{ status: number; etag: string | null; body: T }> {
  const response = await fetch(`${api.url}${path}`);
  return { status: response.status, etag: response.headers.get('etag'), body: (await response.json()) as T };
}



describe('GET /events', () => {
  it('answers every event in sequence order: seq, time, kind, key, version, author, and the resource of an upsert', async () => {
    api = await startApi({ now: () => new Date(HISTORY_AT) });
    await writeHistory(api);
    const { status, body } = await getJson<EventsPage>('/events');
    expect(status).toBe(200);
    expect(body.items.map((event) => [event.seq, event.kind, event.type, event.name, event.version])).toEqual([
      [1, 'upserted', 'Mesh', 'default', 1],
      [2, 'upserted', 'Dataplane', 'backend-1', 1],
      [3, 'upserted', 'Dataplane', 'backend-1', 2],
      [4, 'upserted', 'Mesh', 'payments', 1],
      [5, 'deleted', 'Dataplane', 'backend-1', 3],
      [6, 'upserted', 'Dataplane', 'backend-1', 4],
    ]);
    expect(body.items[1]).toEqual(BACKEND_1_CREATED);
    expect(body.items[4]).not.toHaveProperty('resource');
    expect(body.next).toBe(6);
  });

  it('pages with after and limit, next naming the after of the following page', async () => {
    api = await startApi();
    await writeHistory(api);
    const first = await getJson<EventsPage>('/events?limit=4');
    expect(first.body.items.map((event) => event.seq)).toEqual([1, 2, 3, 4]);
    const second = await getJson<EventsPage>(`/events?after=${first.body.next}&limit=4`);
    expect(second.body).toMatchObject({ next: 6 });
    expect(second.body.items.map((event) => event.seq)).toEqual([5, 6]);
    expect((await getJson<EventsPage>('/events?after=6')).body).toEqual({ items: [], next: 6 });
    expect((await getJson<EventsPage>('/events?after=99')).body).toEqual({ items: [], next: 99 });
  });

  it('answers 410 for events older than the retained history, naming where it starts', async () => {
    api = await startApi({ retention: { events: 2 } });
    await writeHistory(api);
    await api.store.compact();
    const { status, body } = await getJson('/events?after=3');
    expect(status).toBe(410);
    expect(body).toMatchObject({ code: 'CHANCERY_STORE_REVISION_COMPACTED' });
    expect(body.reason).toContain('starts at revision 4');
    expect((await getJson<EventsPage>('/events?after=4')).body.items.map((event) => event.seq)).toEqual([5, 6]);
  });
});

describe('GET a resource at a revision', () => {
  it('answers a Dataplane as it was at each revision, with the version it had then as ETag', async () => {
    api = await startApi();
    await writeHistory(api);
    const atTwo = await getJson(`${BACKEND_1}?revision=2`);
    expect(atTwo).toMatchObject({ status: 200, etag: '"1"', body: { ...dataplaneBody('backend-1'), version: 1 } });
    const atFour = await getJson(`${BACKEND_1}?revision=4`);
    expect(atFour).toMatchObject({ status: 200, etag: '"2"', body: { ...dataplaneBody('backend-1', 10002), version: 2 } });
    expect((await getJson(`${BACKEND_1}?revision=6`)).body).toMatchObject({ version: 4 });
  });

  it('answers a Mesh as it was, and 404 naming the revision where the resource did not exist', async () => {
    api = await startApi();
    await writeHistory(api);
    expect((await getJson('/meshes/payments?revision=4')).body).toEqual({ type: 'Mesh', name: 'payments', dataplaneAuth: 'token', version: 1 });
    const before = await getJson('/meshes/payments?revision=3');
    expect(before).toMatchObject({ status: 404, body: { code: 'CHANCERY_STORE_NOT_FOUND' } });
    expect(before.body.reason).toBe('Mesh payments did not exist at revision 3');
    expect((await getJson(`${BACKEND_1}?revision=5`)).status).toBe(404);
    expect((await getJson(`${BACKEND_1}?revision=0`)).status).toBe(404);
  });

  it('answers 400 naming revision for one the store has not reached', async () => {
    api = await startApi();
    const { status, body } = await getJson('/meshes/default?revision=2');
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'CHANCERY_STORE_FUTURE_REVISION', field: 'revision' });
    expect(body.reason).toContain('at revision 1');
  });

  it('answers 410 for a revision older than the retained history, and the retained ones from the checkpoint', async () => {
    api = await startApi({ retention: { events: 2 } });
    await writeHistory(api);
    await api.store.compact();
    expect((await getJson(`${BACKEND_1}?revision=3`)).body).toMatchObject({ code: 'CHANCERY_STORE_REVISION_COMPACTED' });
    expect((await getJson(`${BACKEND_1}?revision=3`)).status).toBe(410);
    expect((await getJson(`${BACKEND_1}?revision=4`)).body).toMatchObject({ version: 2, networking: { inbound: [{ port: 10002 }] } });
    expect((await getJson('/meshes/payments?revision=4')).status).toBe(200);
  });
});

describe('GET …/history', () => {
  it('answers one Dataplane’s events, oldest first', async () => {
    api = await startApi();
    await writeHistory(api);
    const { status, body } = await getJson<HistoryPage>(`${BACKEND_1}/history`);
    expect(status).toBe(200);
    expect(body.items.map((event) => [event.seq, event.kind, event.version])).toEqual([
      [2, 'upserted', 1],
      [3, 'upserted', 2],
      [5, 'deleted', 3],
      [6, 'upserted', 4],
    ]);
    expect(body).not.toHaveProperty('compactedThrough');
    expect((await getJson<HistoryPage>(`${BACKEND_1}/history?after=3&limit=1`)).body).toMatchObject({ items: [{ seq: 5 }], next: 5 });
  });

  it('answers a Mesh’s own events, not its dataplanes’', async () => {
    api = await startApi();
    await writeHistory(api);
    const { body } = await getJson<HistoryPage>('/meshes/default/history');
    expect(body.items.map((event) => [event.seq, event.type])).toEqual([[1, 'Mesh']]);
  });

  it('answers 404 for a resource that never existed', async () => {
    api = await startApi();
    const { status, body } = await getJson('/meshes/default/dataplanes/nobody/history');
    expect(status).toBe(404);
    expect(body).toMatchObject({ code: 'CHANCERY_STORE_NOT_FOUND' });
  });

  it('says up to which seq the history was compacted, and keeps the resource readable', async () => {
    api = await startApi({ retention: { events: 1 } });
    await writeHistory(api);
    await putJson(`${api.url}/meshes/payments`, { dataplaneAuth: 'none' });
    await api.store.compact();
    expect((await getJson<HistoryPage>(`${BACKEND_1}/history`)).body).toEqual({ items: [], next: 0, compactedThrough: 6 });
    expect((await getJson<HistoryPage>('/meshes/payments/history')).body).toMatchObject({ items: [{ seq: 7 }], compactedThrough: 6 });
  });
});

describe('bad query parameters', () => {
  it.each([
    ['/events?after=-1', 'after'],
    ['/events?after=abc', 'after'],
    ['/events?after=1.5', 'after'],
    ['/events?after=1&after=2', 'after'],
    ['/events?after=99999999999999999', 'after'],
    ['/events?limit=0', 'limit'],
    ['/events?limit=1001', 'limit'],
    ['/events?limit=', 'limit'],
    ['/events?since=3', 'since'],
    [`${BACKEND_1}?revision=latest`, 'revision'],
    [`${BACKEND_1}?revision=-1`, 'revision'],
    [`${BACKEND_1}?rev=3`, 'rev'],
    ['/meshes/default?revision=1e3', 'revision'],
    [`${BACKEND_1}/history?limit=5000`, 'limit'],
    ['/meshes/default/history?revision=1', 'revision'],
  ])('refuses %s with 400 naming %s, and changes nothing', async (path, field) => {
    api = await startApi();
    await writeHistory(api);
    const before = api.contents();
    const { status, body } = await getJson(path);
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'CHANCERY_API_INVALID_QUERY', field });
    expect(body.reason).toContain(field);
    expect(api.contents()).toEqual(before);
    expect((await getJson<EventsPage>('/events')).body.items).toHaveLength(6);
  });
});
