import type { FastifyInstance } from 'fastify';
import { compareText, excerpt } from '../common/index.js';
import type { FleetSession } from '../fleet/index.js';
import type { SessionState, SessionView, TransitionRecord } from '../machines/index.js';
import type { ApiBackend } from './api-backend.js';
import { InvalidQueryError, SessionNotFoundError } from './errors.js';
import { type Query, single, takes } from './query-params.js';

/** A node's story on this instance: where its session is, and the transitions that took it there. */
export type SessionHistory = Pick<SessionView, 'node' | 'instance' | 'state' | 'transitions'>;

/** A node's story across the fleet: its session on each live instance, and their transitions merged. */
export interface FleetSessionHistory {
  readonly node: string;
  readonly sessions: readonly { readonly instance: string; readonly state: SessionState; readonly recordedAt?: string }[];
  /** Oldest first; each names the instance it happened on. */
  readonly transitions: readonly (TransitionRecord & { readonly instance: string })[];
}

/**
 * `GET /sessions/{node}/history` (issue 5): the session's recent transitions, oldest first,
 * each with its event, from and to states, time, and the facts of that step (type URL,
 * version, nonce, resource count, NACK message). With `?scope=fleet`, the story continues
 * across instances: the node's sessions on every live instance sharing the store, and their
 * transitions merged in time order (other instances' as last saved).
 */
export function registerSessionHistoryRoutes(app: FastifyInstance, { sessions, fleet }: Pick<ApiBackend, 'sessions' | 'fleet'>): void {
  app.get<{ Params: { node: string }; Querystring: Query }>('/sessions/:node/history', takes('scope'), async (request): Promise<SessionHistory | FleetSessionHistory> => {
    const { node } = request.params;
    const scope = single(request.query, 'scope') ?? 'local';
    if (scope === 'fleet') {
      const own = sessions.get(node);
      return fleetHistory(node, [...(own === undefined ? [] : [own]), ...(await fleet.others(node))]);
    }
    if (scope !== 'local') throw new InvalidQueryError('scope', `scope must be local or fleet; got ${excerpt(scope)}`);
    const view = sessions.get(node);
    if (view === undefined) throw new SessionNotFoundError(node);
    return { node: view.node, instance: view.instance, state: view.state, transitions: view.transitions };
  });
}

function fleetHistory(node: string, views: readonly FleetSession[]): FleetSessionHistory {
  if (views.length === 0) throw new SessionNotFoundError(node, 'on any live instance');
  const transitions = views
    .flatMap((view) => view.transitions.map((transition) => ({ ...transition, instance: view.instance })))
    // ISO 8601 times in UTC sort as text; the sort is stable, so each instance's own order holds.
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return {
    node,
    sessions: [...views]
      .sort((a, b) => compareText(a.instance, b.instance))
      .map(({ instance, state, recordedAt }) => ({ instance, state, ...(recordedAt !== undefined && { recordedAt }) })),
    transitions,
  };
}
