import { afterEach, describe, expect, it } from 'vitest';
import { type ApiHarness, fakeSessions, sessionView, startApi } from './api-harness.js';

const VIEWS = [
  sessionView('default.web-1', 'serving', { revision: 4 }),
  sessionView('default.backend-1', 'serving', { revision: 4 }),
  sessionView('payments.ledger-1', 'awaiting-snapshot'),
  sessionView('default.backend-2', 'disconnected'),
];
const LAST_SENT = {
  'default.backend-1': { CDS: { version: 'c1', nonce: '3', resources: [{ name: 'web' }] } },
};

let api: ApiHarness | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

async function getJson(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  api ??= await startApi({ sessions: fakeSessions(VIEWS, LAST_SENT) });
  const response = await fetch(`${api.url}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const nodes = (body: Record<string, unknown>) => (body.items as { node: string }[]).map((view) => view.node);

describe('GET /sessions', () => {
  it('lists every session sorted by node, with the total', async () => {
    const { status, body } = await getJson('/sessions');
    expect(status).toBe(200);
    expect(nodes(body)).toEqual(['default.backend-1', 'default.backend-2', 'default.web-1', 'payments.ledger-1']);
    expect(body.total).toBe(4);
  });

  it('filters by state and by mesh', async () => {
    expect(nodes((await getJson('/sessions?state=serving')).body)).toEqual(['default.backend-1', 'default.web-1']);
    expect(nodes((await getJson('/sessions?mesh=payments')).body)).toEqual(['payments.ledger-1']);
    const both = await getJson('/sessions?state=serving&mesh=default');
    expect(nodes(both.body)).toEqual(['default.backend-1', 'default.web-1']);
    expect(both.body.total).toBe(2);
  });

  it('pages with limit and offset, counting the total before paging', async () => {
    const { body } = await getJson('/sessions?limit=2&offset=1');
    expect(nodes(body)).toEqual(['default.backend-2', 'default.web-1']);
    expect(body.total).toBe(4);
  });

  it.each([
    ['/sessions?state=sleeping', 'state'],
    ['/sessions?limit=0', 'limit'],
    ['/sessions?offset=-1', 'offset'],
    ['/sessions?limit=ten', 'limit'],
    ['/sessions?mesh=a&mesh=b', 'mesh'],
  ])('refuses %s naming the %s parameter', async (path, field) => {
    const { status, body } = await getJson(path);
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'CHANCERY_API_INVALID_QUERY', field });
  });
});

describe('GET /sessions/{node}', () => {
  it('answers the session view of a node', async () => {
    const { status, body } = await getJson('/sessions/default.web-1');
    expect(status).toBe(200);
    expect(body).toEqual(VIEWS[0]);
  });

  it('answers 404 naming the node when it has no session here', async () => {
    const { status, body } = await getJson('/sessions/default.nobody');
    expect(status).toBe(404);
    expect(body).toMatchObject({ code: 'CHANCERY_API_SESSION_NOT_FOUND', field: 'node' });
    expect(body.reason).toContain('default.nobody');
  });

  it('answers what was last sent to a node, and 404 for a node without a session', async () => {
    const sent = await getJson('/sessions/default.backend-1/xds');
    expect(sent).toEqual({ status: 200, body: LAST_SENT['default.backend-1'] });
    expect((await getJson('/sessions/default.nobody/xds')).status).toBe(404);
  });
});
