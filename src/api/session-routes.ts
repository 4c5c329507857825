import type { FastifyInstance } from 'fastify';
import type { SessionState, SessionView } from '../machines/session-view.js';
import type { ApiBackend } from './api-backend.js';
import { InvalidQueryError, SessionNotFoundError } from './errors.js';
import { integer, type Query, single } from './query-params.js';

// A record, not a list, so a state added to SessionState is a compile error here until listed.
const SESSION_STATES: Readonly<Record<SessionState, true>> = {
  connecting: true,
  'awaiting-snapshot': true,
  serving: true,
  disconnected: true,
  evicted: true,
};

interface SessionQuery {
  readonly state?: SessionState;
  readonly mesh?: string;
  readonly limit?: number;
  readonly offset: number;
}

/**
 * This instance's sessions (DESIGN §7): `GET /sessions` as `{ items, total }` sorted by
 * node, filtered by `?state=` and `?mesh=`, paged by `?limit=` and `?offset=`; one session;
 * and what was last sent to a node.
 */
export function registerSessionRoutes(app: FastifyInstance, sessions: ApiBackend['sessions']): void {
  app.get<{ Querystring: Record<string, unknown> }>('/sessions', async (request) => {
    const query = readSessionQuery(request.query);
    const matching = sessions.list().filter((view) => matches(view, query));
    matching.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
    const end = query.limit === undefined ? undefined : query.offset + query.limit;
    return { items: matching.slice(query.offset, end), total: matching.length };
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

function matches(view: SessionView, query: SessionQuery): boolean {
  if (query.state !== undefined && view.state !== query.state) return false;
  // Mesh and dataplane names are DNS labels, so the node id's first dot ends the mesh.
  return query.mesh === undefined || view.node.startsWith(`${query.mesh}.`);
}

function readSessionQuery(query: Query): SessionQuery {
  const state = single(query, 'state');
  if (state !== undefined && !Object.hasOwn(SESSION_STATES, state)) {
    throw new InvalidQueryError('state', `state must be one of ${Object.keys(SESSION_STATES).join(', ')}; got ${state}`);
  }
  const mesh = single(query, 'mesh');
  const limit = integer(query, 'limit', { min: 1 });
  return {
    ...(state !== undefined && { state: state as SessionState }),
    ...(mesh !== undefined && { mesh }),
    ...(limit !== undefined && { limit }),
    offset: integer(query, 'offset', { min: 0 }) ?? 0,
  };
}

function notFound(node: string): never {
  throw new SessionNotFoundError(node);
}
