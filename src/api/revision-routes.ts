import type { FastifyInstance } from 'fastify';
import type { RolloutAnswer, RolloutScope } from '../changes/index.js';
import { excerpt } from '../excerpt.js';
import { asSeq } from '../store/index.js';
import type { ApiBackend } from './api-backend.js';
import { InvalidQueryError } from './errors.js';
import { integer, single, takes, type Query } from './query-params.js';

/**
 * `GET /revisions/{R}` (issue 31): how the write that made revision R landed. Its nodes are
 * those whose configuration differs between `since` (default R − 1; a change of several events
 * gives its first event's revision − 1, as its answer's `Chancery-From-Revision` says) and R;
 * each is ACKed, NACKed (messages grouped), pending, or not connected anywhere. `?scope=fleet`
 * reads every live instance's sessions, as saved, besides this one's.
 */
export function registerRevisionRoutes(app: FastifyInstance, { rollouts }: Pick<ApiBackend, 'rollouts'>): void {
  app.get<{ Params: { revision: string }; Querystring: Query }>('/revisions/:revision', takes('since', 'scope'), async (request): Promise<RolloutAnswer> => {
    const revision = asSeq(Number(request.params.revision));
    const since = integer(request.query, 'since', { min: 0 });
    return rollouts.status(revision, { ...(since !== undefined && { since: asSeq(since) }), scope: scopeOf(request.query) });
  });
}

function scopeOf(query: Query): RolloutScope {
  const scope = single(query, 'scope') ?? 'local';
  if (scope !== 'local' && scope !== 'fleet') throw new InvalidQueryError('scope', `scope must be local or fleet; got ${excerpt(scope)}`);
  return scope;
}
