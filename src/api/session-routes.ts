import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { compareText, excerpt } from '../common/index.js';
import { lastResponseNacked, SESSION_STATES, type SessionState, type SessionView } from '../machines/index.js';
import { DNS_LABEL_RULE, isDnsLabel, parseNodeId } from '../mesh/index.js';
import type { SessionPage, SessionSummary } from '../sessions/index.js';
import type { ApiBackend } from './api-backend.js';
import { InvalidQueryError, SessionNotFoundError } from './errors.js';
import { firstInOrder } from './first-in-order.js';
import { integer, type Query, single, takes } from './query-params.js';
import { type FeedClient, RESYNC_EVENT, SessionFeed } from './session-feed.js';

/** How often the live feed sends a batch, how many views one batch may carry, and how long it waits after a resync. */
const FEED = { interval: 300, maxBatch: 500, resyncInterval: 2_000 } as const;

interface SessionQuery {
  /** `local` (default): this instance's sessions; `fleet`: every live instance's. */
  readonly scope: 'local' | 'fleet';
  readonly state?: SessionState;
  readonly mesh?: string;
  readonly instance?: string;
  readonly nacking?: boolean;
  readonly limit?: number;
  readonly offset: number;
}

/**
 * This instance's sessions (DESIGN §7): `GET /sessions` as `{ items, total, counts, refused }` sorted by
 * node, or with `?scope=fleet` those of every live instance sharing the store (sorted by node,
 * then instance), filtered by `?state=`, `?mesh=`, `?instance=` and `?nacking=`, paged by `?limit=` and
 * `?offset=`, with the filtered set counted by state and instance before paging; the live
 * feed `GET /sessions/events`; one session; and what was last sent to a node.
 */
export function registerSessionRoutes(app: FastifyInstance, { sessions, fleet, refusals }: Pick<ApiBackend, 'sessions' | 'fleet' | 'refusals'>): void {
  app.get<{ Querystring: Record<string, unknown> }>('/sessions', takes('scope', 'state', 'mesh', 'instance', 'nacking', 'limit', 'offset'), async (request) => {
    const query = readSessionQuery(request.query);
    const listed =
      query.scope === 'fleet'
        ? page(fleetSource(sessions, await fleet.others()), query)
        : unfiltered(query)
          ? sessions.inOrder(query.offset, query.limit)
          : page(localSource(sessions), query);
    // Refused streams have no session: they are listed beside the sessions, as this instance saw them.
    return { ...listed, refused: refusals() };
  });

  const feed = new SessionFeed(sessions, FEED);
  app.addHook('preClose', (done) => {
    feed.close();
    done();
  });
  // `access_token`: a browser's EventSource cannot send the Authorization header (access.ts).
  app.get<{ Querystring: Record<string, unknown> }>('/sessions/events', takes('node', 'access_token'), (request, reply) => {
    const node = single(request.query, 'node');
    // A node no session can have would make a feed that never says a word.
    const parsed = node === undefined ? undefined : parseNodeId(node);
    if (parsed?.ok === false) throw new InvalidQueryError('node', parsed.reason);
    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    // Sent at once, so the browser's EventSource opens now rather than at the first change.
    response.write('retry: 2000\n\n');
    const remove = feed.add(eventStreamClient(response, node));
    response.on('close', remove);
  });

  app.get<{ Params: { node: string } }>('/sessions/:node', async (request) => {
    const { node } = request.params;
    return sessions.get(node) ?? notFound(node);
  });

  app.get<{ Params: { node: string } }>('/sessions/:node/xds', async (request) => {
    const { node } = request.params;
    return sessions.lastSent(node) ?? notFound(node);
  });
}

/**
 * A feed client writing to an HTTP response. A client that does not keep up gets nothing more
 * until its socket drains, then one `resync`: a slow browser costs the server no buffering.
 */
function eventStreamClient(response: ServerResponse, node: string | undefined): FeedClient {
  let blocked = false;
  let missed = false;
  response.on('drain', () => {
    blocked = false;
    if (missed) {
      missed = false;
      blocked = !response.write(RESYNC_EVENT);
    }
  });
  return {
    ...(node !== undefined && { node }),
    send(event) {
      if (blocked) missed = true;
      else blocked = !response.write(event);
    },
    end: () => response.end(),
  };
}

/** One page of the sessions `query` selects, sorted by node then instance, with the counts of all of them. */
function page<S extends SessionSummary>(source: SessionSource<S>, query: SessionQuery) {
  const matching = source.summaries.filter((summary) => matches(summary, query, source));
  const end = query.limit === undefined ? matching.length : query.offset + query.limit;
  const items: SessionView[] = [];
  for (const summary of firstInOrder(matching, end, bySession).slice(query.offset)) {
    const view = source.view(summary);
    if (view !== undefined) items.push(view);
  }
  return { items, total: matching.length, counts: countsOf(matching) };
}

function bySession(a: SessionSummary, b: SessionSummary): number {
  return compareText(a.node, b.node) || compareText(a.instance, b.instance);
}

/** Where `GET /sessions` reads: the facts to filter and count every session by, and the views of a page. */
interface SessionSource<S extends SessionSummary> {
  readonly summaries: readonly S[];
  view(summary: S): SessionView | undefined;
  nacking(summary: S): boolean;
}

/** This instance: views are built only for the page, as 10,000 per request would cost the event loop. */
function localSource(sessions: ApiBackend['sessions']): SessionSource<SessionSummary> {
  return {
    summaries: sessions.summaries(),
    view: ({ node }) => sessions.get(node),
    nacking: ({ node }) => sessions.nacking(node),
  };
}

/**
 * The fleet: this instance's sessions as `localSource` reads them, and the other instances'
 * as they saved them (their views exist already).
 */
function fleetSource(sessions: ApiBackend['sessions'], others: readonly SessionView[]): SessionSource<SessionSummary & { readonly view?: SessionView }> {
  const local = localSource(sessions);
  return {
    summaries: [...local.summaries, ...others.map((view) => ({ node: view.node, state: view.state, instance: view.instance, view }))],
    view: (summary) => summary.view ?? local.view(summary),
    nacking: (summary) => (summary.view === undefined ? local.nacking(summary) : lastResponseNacked(summary.view.types)),
  };
}

/** No filter: the page is a slice of the sessions the registry keeps in order. */
function unfiltered({ state, mesh, instance, nacking }: SessionQuery): boolean {
  return state === undefined && mesh === undefined && instance === undefined && nacking === undefined;
}

function matches<S extends SessionSummary>(summary: S, query: SessionQuery, source: SessionSource<S>): boolean {
  if (query.state !== undefined && summary.state !== query.state) return false;
  if (query.instance !== undefined && summary.instance !== query.instance) return false;
  // Mesh and dataplane names are DNS labels, so the node id's first dot ends the mesh.
  if (query.mesh !== undefined && !summary.node.startsWith(`${query.mesh}.`)) return false;
  // Last: the only fact that costs more than a comparison.
  return query.nacking === undefined || source.nacking(summary) === query.nacking;
}

/** Every state of the chart, in its order, at 0 when no session is in it: the UI lists the states from these. */
function countsOf(summaries: readonly SessionSummary[]): SessionPage['counts'] {
  const byState: Record<string, number> = Object.fromEntries(SESSION_STATES.map((state) => [state, 0]));
  const byInstance: Record<string, number> = {};
  for (const { state, instance } of summaries) {
    byState[state] = (byState[state] ?? 0) + 1;
    byInstance[instance] = (byInstance[instance] ?? 0) + 1;
  }
  return { byState, byInstance };
}

function readSessionQuery(query: Query): SessionQuery {
  const scope = single(query, 'scope') ?? 'local';
  if (scope !== 'local' && scope !== 'fleet') throw new InvalidQueryError('scope', `scope must be local or fleet; got ${excerpt(scope)}`);
  const state = single(query, 'state');
  if (state !== undefined && !(SESSION_STATES as readonly string[]).includes(state)) {
    throw new InvalidQueryError('state', `state must be one of ${SESSION_STATES.join(', ')}; got ${excerpt(state)}`);
  }
  const mesh = single(query, 'mesh');
  // A mesh no dataplane can be in would list nothing, hiding the typo.
  if (mesh !== undefined && !isDnsLabel(mesh)) throw new InvalidQueryError('mesh', `mesh ${excerpt(mesh)} ${DNS_LABEL_RULE}`);
  const instance = single(query, 'instance');
  const nacking = single(query, 'nacking');
  if (nacking !== undefined && nacking !== 'true' && nacking !== 'false') {
    throw new InvalidQueryError('nacking', `nacking must be true or false; got ${excerpt(nacking)}`);
  }
  const limit = integer(query, 'limit', { min: 1 });
  return {
    scope,
    ...(state !== undefined && { state: state as SessionState }),
    ...(mesh !== undefined && { mesh }),
    ...(instance !== undefined && { instance }),
    ...(nacking !== undefined && { nacking: nacking === 'true' }),
    ...(limit !== undefined && { limit }),
    offset: integer(query, 'offset', { min: 0 }) ?? 0,
  };
}

function notFound(node: string): never {
  throw new SessionNotFoundError(node);
}
