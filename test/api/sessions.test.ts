import { SESSION_STATES } from '../../src/machines/index.js';
import { type ClientRequest, get, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionView } from '../../src/machines/session-view.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import { OpenStreams } from '../support/open-streams.js';
import { startHarness } from '../support/harness.js';
import { BACKEND, envoyDataplane, sessionIn } from '../xds/fixtures.js';
import { type ApiHarness, fakeSessions, sessionView, startApi } from './api-harness.js';

/** Every state of the chart at 0: counts name each state, so a client can list them. */
const NONE = Object.fromEntries(SESSION_STATES.map((state) => [state, 0]));

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
    // A name no mesh or node can have would list nothing, hiding the typo.
    ['/sessions?mesh=BAD_NAME', 'mesh'],
    ['/sessions/events?node=no-dot', 'node'],
  ])('refuses %s naming the %s parameter', async (path, field) => {
    const { status, body } = await getJson(path);
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'CHANCERY_API_INVALID_QUERY', field });
  });
});

describe('GET /sessions of a running control plane: the unfiltered page the registry keeps in order', () => {
  it('is the page the filtering path makes of the same sessions, counts included', async () => {
    const harness = await startHarness();
    const streams = new OpenStreams(() => harness.xds);
    try {
      await harness.cp.apply(BACKEND);
      for (const name of ['web-3', 'web-1', 'web-2']) await harness.cp.apply(envoyDataplane(name));
      // Out of order, and one node without a Dataplane: it waits for a snapshot.
      for (const node of ['default.web-3', 'default.zz-unknown', 'default.web-1', 'default.backend-1', 'default.web-2']) {
        const stream = streams.sotw();
        stream.send({ typeUrl: CLUSTER, nodeId: node });
      }
      await Promise.all(['default.web-3', 'default.web-1', 'default.backend-1', 'default.web-2'].map((node) => sessionIn(harness.cp, node, 'serving')));
      await sessionIn(harness.cp, 'default.zz-unknown', 'awaiting-snapshot');
      const read = async (query: string) => (await fetch(`http://${harness.api}/sessions?${query}`)).json() as Promise<Record<string, unknown>>;
      for (const paging of ['', 'limit=2', 'limit=2&offset=1', 'offset=4', 'limit=10&offset=9']) {
        // `instance=` (this one) selects the same sessions through the path that filters and sorts.
        const [kept, filtered] = await Promise.all([read(paging), read(`${paging}&instance=${harness.cp.instanceId}`)]);
        expect(kept, paging).toEqual(filtered);
      }
      const whole = await read('');
      expect(nodes(whole)).toEqual(['default.backend-1', 'default.web-1', 'default.web-2', 'default.web-3', 'default.zz-unknown']);
      expect(whole).toMatchObject({ total: 5, counts: { byState: { ...NONE, serving: 4, 'awaiting-snapshot': 1 }, byInstance: { test: 5 } } });
    } finally {
      streams.closeAll();
      await harness.stop();
    }
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

describe('GET /sessions over a fleet: instance and NACKing filters, counts, views only for the page', () => {
  const LDS = 'type.googleapis.com/envoy.config.listener.v3.Listener';
  const sent = (nonce: string) => ({ version: `v${nonce}`, nonce, resources: 1, at: '2026-01-05T10:00:00.000Z' });
  const nacked = (nonce: string) => ({ version: `v${nonce}`, nonce, message: 'port 0 is invalid', at: '2026-01-05T10:00:00.000Z' });
  const subscription = { wildcard: true, names: [] };
  const FLEET = [
    // Its latest LDS response was NACKed.
    sessionView('default.web-1', 'serving', { instance: 'a', types: { LDS: { typeUrl: LDS, subscription, sent: sent('2'), nacked: nacked('2') } } }),
    // NACKed once, then sent a newer version: not NACKing any more.
    sessionView('default.web-2', 'serving', { instance: 'a', types: { LDS: { typeUrl: LDS, subscription, sent: sent('3'), nacked: nacked('2') } } }),
    sessionView('default.backend-1', 'awaiting-snapshot', { instance: 'b' }),
    sessionView('default.backend-2', 'serving', { instance: 'b' }),
    sessionView('payments.ledger-1', 'disconnected', { instance: 'b', types: { LDS: { typeUrl: LDS, subscription, sent: sent('5'), nacked: nacked('5') } } }),
  ];
  let built: string[] = [];

  async function fleetJson(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const sessions = fakeSessions(FLEET);
    api ??= await startApi({
      sessions: {
        ...sessions,
        list: () => {
          throw new Error('GET /sessions must not build every view');
        },
        get: (node) => {
          built.push(node);
          return sessions.get(node);
        },
      },
    });
    built = [];
    const response = await fetch(`${api.url}${path}`);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it('keeps the sessions whose latest response of some type was NACKed, or the others', async () => {
    expect(nodes((await fleetJson('/sessions?nacking=true')).body)).toEqual(['default.web-1', 'payments.ledger-1']);
    expect(nodes((await fleetJson('/sessions?nacking=false')).body)).toEqual(['default.backend-1', 'default.backend-2', 'default.web-2']);
  });

  it('filters by instance, and combines every filter', async () => {
    expect(nodes((await fleetJson('/sessions?instance=b')).body)).toEqual(['default.backend-1', 'default.backend-2', 'payments.ledger-1']);
    expect(nodes((await fleetJson('/sessions?instance=a&mesh=default&state=serving&nacking=true')).body)).toEqual(['default.web-1']);
    expect((await fleetJson('/sessions?instance=c')).body).toEqual({ items: [], total: 0, counts: { byState: NONE, byInstance: {} }, refused: { total: 0, recent: [] } });
  });

  it('counts the filtered sessions by state and by instance before paging', async () => {
    const { body } = await fleetJson('/sessions?mesh=default&limit=1&offset=1');
    expect(nodes(body)).toEqual(['default.backend-2']);
    expect(body.total).toBe(4);
    expect(body.counts).toEqual({ byState: { ...NONE, serving: 3, 'awaiting-snapshot': 1 }, byInstance: { a: 2, b: 2 } });
  });

  it('builds the views of the page only', async () => {
    // Filtered: an unfiltered page is a slice of the registry's order ("GET /sessions of a running control plane").
    const { body } = await fleetJson('/sessions?mesh=default&limit=2&offset=2');
    expect(nodes(body)).toEqual(['default.web-1', 'default.web-2']);
    expect(built).toEqual(['default.web-1', 'default.web-2']);
    expect(nodes((await fleetJson('/sessions?mesh=default&offset=9')).body)).toEqual([]);
    expect(built).toEqual([]);
  });

  it.each([
    ['/sessions?nacking=yes', 'nacking'],
    ['/sessions?nacking=true&nacking=false', 'nacking'],
    ['/sessions?instance=a&instance=b', 'instance'],
    ['/sessions?scope=everywhere', 'scope'],
  ])('refuses %s naming the %s parameter', async (path, field) => {
    const { status, body } = await fleetJson(path);
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'CHANCERY_API_INVALID_QUERY', field });
    expect(body.reason).toContain(field);
  });
});

describe('GET /sessions/events', () => {
  /** The sessions' views, pushed by the test as the registry would publish them. */
  const listeners = new Set<(node: string, view?: SessionView) => void>();
  const publish = (view: SessionView) => {
    for (const listener of listeners) listener(view.node, view);
  };
  /** A status change without a view: the feed reads the session's view itself. */
  const touch = (node: string) => {
    for (const listener of listeners) listener(node);
  };
  let onUnwatch = () => {};
  const streams: ClientRequest[] = [];
  afterEach(() => {
    for (const stream of streams.splice(0)) stream.destroy();
  });

  /** Opens the feed with node:http (fetch keeps a spare idle connection that would hold the server's close up). */
  async function subscribe(query = ''): Promise<AsyncIterator<{ event: string; data: unknown }>> {
    api ??= await startApi({
      sessions: {
        ...fakeSessions(VIEWS),
        watch: (listener) => {
          listeners.add(listener);
          return () => {
            listeners.delete(listener);
            onUnwatch();
          };
        },
      },
    });
    const request = get(`${api.url}/sessions/events${query}`);
    streams.push(request);
    const response = await new Promise<IncomingMessage>((resolve) => request.on('response', resolve));
    expect(response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    return serverSentEvents(response);
  }

  it('sends each changed session once per batch, at its latest, without transitions', async () => {
    const events = await subscribe();
    const transitions = [{ at: '2026-01-05T10:00:00.000Z', event: 'stream.closed', from: 'serving' as const, to: 'disconnected' as const }];
    publish(sessionView('default.web-1', 'disconnected', { transitions }));
    publish(sessionView('default.web-1', 'evicted', { transitions }));
    publish(sessionView('default.web-2', 'serving'));

    const { value } = await events.next();
    expect(value).toEqual({
      event: 'sessions',
      data: { views: [{ node: 'default.web-1', state: 'evicted', instance: 'test', types: {} }, { node: 'default.web-2', state: 'serving', instance: 'test', types: {} }] },
    });
  });

  it('sends one node\'s full view to a client that asks for that node only', async () => {
    const events = await subscribe('?node=default.web-2');
    const transitions = [{ at: '2026-01-05T10:00:00.000Z', event: 'snapshot.generated', from: 'generating' as const, to: 'serving' as const }];
    publish(sessionView('default.web-1', 'disconnected'));
    publish(sessionView('default.web-2', 'serving', { transitions }));

    const { value } = await events.next();
    expect(value).toEqual({ event: 'session', data: sessionView('default.web-2', 'serving', { transitions }) });
  });

  it('reads the view of a session whose status alone changed (a push, an ACK), once per batch', async () => {
    const events = await subscribe();
    const node = await subscribe('?node=default.web-1');
    touch('default.web-1');
    touch('default.web-1');
    touch('default.nobody');

    const web1 = VIEWS.find((view) => view.node === 'default.web-1')!;
    expect((await events.next()).value).toEqual({ event: 'sessions', data: { views: [{ ...web1, transitions: undefined }] } });
    expect((await node.next()).value).toEqual({ event: 'session', data: web1 });
  });

  it('tells clients to refetch rather than send a batch of more than 500 sessions', async () => {
    const events = await subscribe();
    for (let i = 0; i < 501; i++) publish(sessionView(`default.web-${i}`, 'serving'));

    expect((await events.next()).value).toEqual({ event: 'resync', data: {} });
  });

  it('watches the sessions only while a client listens', async () => {
    await subscribe();
    await subscribe('?node=default.web-1');
    expect(listeners.size).toBe(1);
    const unwatched = new Promise<void>((resolve) => {
      onUnwatch = resolve;
    });
    for (const stream of streams.splice(0)) stream.destroy();
    await unwatched;
    expect(listeners.size).toBe(0);
  });

  it('ends every event stream when the server closes, so closing does not wait for browsers', async () => {
    const events = await subscribe();
    await api?.close();
    api = undefined;
    expect(await events.next()).toEqual({ done: true, value: undefined });
    expect(listeners.size).toBe(0);
  });
});

/** Parses a text/event-stream body into `{ event, data }`, skipping events without data (`retry:`). */
async function* serverSentEvents(body: AsyncIterable<Buffer>): AsyncGenerator<{ event: string; data: unknown }> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) !== -1) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const fields = new Map(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]));
      if (fields.has('data')) yield { event: fields.get('event') ?? 'message', data: JSON.parse(fields.get('data')!) };
    }
  }
}
