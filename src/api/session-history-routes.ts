import type { FastifyInstance } from 'fastify';
import type { SessionView } from '../machines/session-view.js';
import type { ApiBackend } from './api-backend.js';
import { SessionNotFoundError } from './errors.js';
import { onlyKnown, type Query } from './query-params.js';

/** A node's story on this instance: where its session is, and the transitions that took it there. */
export type SessionHistory = Pick<SessionView, 'node' | 'instance' | 'state' | 'transitions'>;

/**
 * `GET /sessions/{node}/history` (issue 5): the session's recent transitions, oldest first,
 * each with its event, from and to states, time, and the facts of that step (type URL,
 * version, nonce, resource count, NACK message).
 */
export function registerSessionHistoryRoutes(app: FastifyInstance, sessions: ApiBackend['sessions']): void {
  app.get<{ Params: { node: string }; Querystring: Query }>('/sessions/:node/history', async (request): Promise<SessionHistory> => {
    onlyKnown(request.query, []);
    const { node } = request.params;
    const view = sessions.get(node);
    if (view === undefined) throw new SessionNotFoundError(node);
    return { node: view.node, instance: view.instance, state: view.state, transitions: view.transitions };
  });
}
