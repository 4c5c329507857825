import { Writable } from 'node:stream';
import { pino } from 'pino';
import { NEVER } from 'rxjs';
import { type ApiBackend, type ApiServerOptions, createApiServer } from '../../src/api/index.js';
import { ChangeDesk, Rollouts, type FleetSessions } from '../../src/changes/index.js';
import { lastResponseNacked, SESSION_STATES } from '../../src/machines/index.js';
import type { FleetSession } from '../../src/fleet/fleet-sessions.js';
import type { SessionView } from '../../src/machines/session-view.js';
import { createMemoryStore, type ResourceStore, type Retention } from '../../src/store/index.js';
import { perTest } from '../support/per-test.js';

export interface ApiHarness {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `127.0.0.1:<port>`, as the CLI's `--api-address` takes it. */
  readonly address: string;
  readonly store: ResourceStore;
  /** Every log line the server wrote, parsed. */
  readonly logs: readonly Record<string, unknown>[];
  /** The store's revision and contents, to compare before and after a refused request. */
  contents(): unknown;
  /** `timeoutMs`: how long the server waits for requests in flight (ApiServer.close). */
  close(timeoutMs?: number): Promise<void>;
}

export interface HarnessOptions {
  readonly sessions?: ApiBackend['sessions'];
  /** The other instances' sessions, as saved (`?scope=fleet`); default none. */
  readonly others?: readonly FleetSession[];
  /** Leave the store unstarted (not ready). */
  readonly startStore?: boolean;
  readonly bodyLimit?: number;
  /** The store's retention; it compacts only when the test calls `store.compact()`. */
  readonly retention?: Retention;
  /** Stamps each event's time. */
  readonly now?: () => Date;
  /** The eviction grace the chart shows. */
  readonly evictionGrace?: number;
}

/** A real API server on 127.0.0.1:0 over a started memory store and the given sessions. */
export async function startApi(options: HarnessOptions = {}): Promise<ApiHarness> {
  const store = createMemoryStore({ instance: 'test', compaction: NEVER, retention: options.retention, now: options.now });
  if (options.startStore ?? true) await store.start();
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const sessions = options.sessions ?? fakeSessions([]);
  const fleet: FleetSessions = { local: (node) => sessions.get(node), saved: async () => options.others ?? [] };
  const backend: ApiBackend = {
    instanceId: 'test',
    store,
    changes: new ChangeDesk({ store, sessions: fleet }),
    rollouts: new Rollouts({ store, sessions: fleet }),
    sessions,
    fleet: {
      others: async (node) => (options.others ?? []).filter((view) => node === undefined || view.node === node),
      instances: async () => [],
    },
    ready: () => store.ready,
    xdsAddress: () => '0.0.0.0:5678',
    now: () => (options.now ?? (() => new Date()))().getTime(),
    refusals: () => ({ total: 0, recent: [] }),
    ...(options.evictionGrace !== undefined && { evictionGrace: options.evictionGrace }),
  };
  const serverOptions: ApiServerOptions = { logger: pino({ level: 'info' }, sink), bodyLimit: options.bodyLimit };
  const server = createApiServer(backend, serverOptions);
  const address = await server.listen('127.0.0.1', 0);
  return {
    url: `http://${address}`,
    address,
    store,
    logs,
    contents: () => ({
      revision: store.projection.revision,
      meshes: store.list('Mesh'),
      dataplanes: store.list('Dataplane'),
    }),
    async close(timeoutMs) {
      await server.close(timeoutMs);
      await store.close();
    },
  };
}

/** The session registry's read side, over fixed views: enough to exercise the routes. */
export function fakeSessions(
  views: readonly SessionView[],
  lastSent: Readonly<Record<string, ReturnType<ApiBackend['sessions']['lastSent']>>> = {},
): ApiBackend['sessions'] {
  return {
    list: () => views,
    get: (node) => views.find((view) => view.node === node),
    summaries: () => views.map(({ node, state, instance }) => ({ node, state, instance })),
    inOrder: (offset, limit) => {
      const byState: Record<string, number> = Object.fromEntries(SESSION_STATES.map((state) => [state, 0]));
      const byInstance: Record<string, number> = {};
      for (const { state, instance } of views) {
        byState[state]!++;
        byInstance[instance] = (byInstance[instance] ?? 0) + 1;
      }
      const sorted = [...views].sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
      return { items: sorted.slice(offset, limit === undefined ? undefined : offset + limit), total: views.length, counts: { byState, byInstance } };
    },
    nacking: (node) => lastResponseNacked(views.find((view) => view.node === node)?.types ?? {}),
    // Fixed views never change.
    watch: () => () => {},
    lastSent: (node) => lastSent[node],
  };
}

export function sessionView(node: string, state: SessionView['state'], overrides: Partial<SessionView> = {}): SessionView {
  return { node, state, instance: 'test', types: {}, transitions: [], ...overrides };
}

/** A valid Dataplane body for `PUT /meshes/default/dataplanes/<name>`. */
export function dataplaneBody(name: string, port = 10001): Record<string, unknown> {
  return {
    type: 'Dataplane',
    mesh: 'default',
    name,
    networking: {
      address: '127.0.0.1',
      inbound: [{ port, servicePort: 9001, tags: { service: 'backend', version: 'v1' } }],
      outbound: [{ port: 20001, service: 'web' }],
    },
  };
}

export async function putJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** How `apiFor` starts the API, when, and the Dataplanes it writes to it first. */
export interface ApiForOptions extends HarnessOptions {
  /** A new API for each test (default), or one for all the tests of the file or `describe`. */
  readonly scope?: 'each' | 'all';
  /** Dataplane bodies of mesh `default` (`dataplaneBody(…)`), each written through the API, refused ones failing the hook. */
  readonly dataplanes?: readonly Record<string, unknown>[];
}

/**
 * Registers hooks of a test file (or a `describe`): `startApi(options)` before each test, or
 * before all of them, with `dataplanes` written through it; closed after. What it returns stands
 * for the API of the test running now.
 */
export function apiFor({ scope = 'each', dataplanes = [], ...options }: ApiForOptions = {}): ApiHarness {
  const start = async () => {
    const api = await startApi(options);
    for (const dataplane of dataplanes) {
      const response = await putJson(`${api.url}/meshes/default/dataplanes/${String(dataplane['name'])}`, dataplane);
      if (!response.ok) throw new Error(`PUT Dataplane ${String(dataplane['name'])} answered ${response.status}: ${await response.text()}`);
    }
    return api;
  };
  return perTest(start, (api) => api.close(), scope);
}

/** The time the history tests' API stamps every event with (`startApi({ now })`). */
export const HISTORY_AT = '2030-01-02T03:04:05.000Z';
/** The path of backend-1, whose history the history tests write. */
export const BACKEND_1 = '/meshes/default/dataplanes/backend-1';

/**
 * Writes a history through `api`, each write checked: Mesh default (seq 1, there from the
 * start); backend-1 created (2), changed (3); Mesh payments (4); backend-1 deleted (5), re-created (6).
 */
export async function writeHistory(api: ApiHarness): Promise<void> {
  const ok = async (response: Promise<Response>) => {
    const answered = await response;
    if (answered.status >= 300) throw new Error(`${answered.url} answered ${answered.status}: ${await answered.text()}`);
  };
  await ok(putJson(`${api.url}${BACKEND_1}`, dataplaneBody('backend-1')));
  await ok(putJson(`${api.url}${BACKEND_1}`, dataplaneBody('backend-1', 10002)));
  await ok(putJson(`${api.url}/meshes/payments`, {}));
  await ok(fetch(`${api.url}${BACKEND_1}`, { method: 'DELETE' }));
  await ok(putJson(`${api.url}${BACKEND_1}`, dataplaneBody('backend-1', 10003)));
}

/** backend-1's creation in `writeHistory` (seq 2), as `GET /events` and `chancery history -o json` show it. */
export const BACKEND_1_CREATED = {
  seq: 2,
  at: HISTORY_AT,
  kind: 'upserted',
  type: 'Dataplane',
  mesh: 'default',
  name: 'backend-1',
  version: 1,
  by: { instance: 'test', caller: '127.0.0.1' },
  resource: dataplaneBody('backend-1'),
} as const;
