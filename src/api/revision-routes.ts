import type { FastifyInstance } from 'fastify';
import { type ResourceChange, type RolloutAnswer, type RolloutScope, type WriteSummary } from '../changes/index.js';
import { excerpt } from '../common/index.js';
import { DNS_LABEL_RULE, isDnsLabel, resourceJson } from '../mesh/index.js';
import { asSeq } from '../store/index.js';
import { authorOf, checkMeshes } from './access.js';
import type { ApiBackend } from './api-backend.js';
import { InvalidQueryError } from './errors.js';
import { integer, single, takes, type Query } from './query-params.js';
import { readWriteQuery, writeAnswer, WRITE_PARAMS } from './write-query.js';

/** Writes `GET /revisions` answers unless asked otherwise, and the most it answers. */
const RECENT_WRITES = { default: 20, max: 100 } as const;

/**
 * Revisions (issue 31). `GET /revisions`: the newest writes, newest first, each with the
 * revisions it spans, when, by whom and what. `GET /revisions/{R}`: how the write that made revision R landed. Its nodes are
 * those whose configuration differs between `since` (default: before the write that made R,
 * however many events it has) and R;
 * each is ACKed, NACKed (messages grouped), pending, or not connected anywhere. `?scope=fleet`
 * reads every live instance's sessions, as saved, besides this one's. `POST /revisions/{R}/revert`
 * writes the store back as it was at R; `GET /diff?from=R1&to=R2` shows what differs.
 */
export function registerRevisionRoutes(app: FastifyInstance, { rollouts, changes, store }: Pick<ApiBackend, 'rollouts' | 'changes' | 'store'>): void {
  app.get<{ Querystring: Query }>('/revisions', takes('limit'), async (request): Promise<{ items: readonly WriteSummary[] }> => ({
    items: await rollouts.recent(integer(request.query, 'limit', { min: 1, max: RECENT_WRITES.max }) ?? RECENT_WRITES.default),
  }));

  app.get<{ Params: { revision: string }; Querystring: Query }>('/revisions/:revision', takes('since', 'scope'), async (request): Promise<RolloutAnswer> => {
    const revision = asSeq(Number(request.params.revision));
    const since = integer(request.query, 'since', { min: 0 });
    return rollouts.status(revision, { ...(since !== undefined && { since: asSeq(since) }), scope: scopeOf(request.query) });
  });

  // Undo (issue 31): one new write putting back what differs from revision R; a dry run as any write's.
  app.post<{ Params: { revision: string }; Querystring: Query }>('/revisions/:revision/revert', takes(...WRITE_PARAMS, 'mesh'), async (request) => {
    const asked = readWriteQuery(request.query);
    const mesh = meshOf(request.query);
    checkMeshes(request, mesh === undefined ? undefined : [mesh]);
    const writes = await changes.revertTo(asSeq(Number(request.params.revision)), mesh);
    const caller = authorOf(request);
    if (asked.dryRun) return changes.preview(writes, { caller, page: asked.page });
    const written = await changes.write(writes, { caller, failOnWarnings: asked.failOnWarnings });
    request.log.info({ to: Number(request.params.revision), mesh, from: written.written.from, revision: written.written.revision, writes: writes.length }, 'reverted');
    return writeAnswer(written);
  });

  app.get<{ Querystring: Query }>('/diff', takes('from', 'to', 'mesh'), async (request): Promise<DiffAnswer> => {
    const from = integer(request.query, 'from', { min: 0 });
    if (from === undefined) throw new InvalidQueryError('from', 'from is required: the revision to compare from');
    const to = integer(request.query, 'to', { min: 0 }) ?? store.projection.revision;
    const mesh = meshOf(request.query);
    const items = await changes.diff(asSeq(from), asSeq(to), mesh);
    return { from, to, items: items.map(changeJson) };
  });
}

/** `GET /diff`: the configuration resources (Meshes, Dataplanes, policies) that differ between two revisions, each as it was and as it is. */
export interface DiffAnswer {
  readonly from: number;
  readonly to: number;
  readonly items: readonly DiffItem[];
}

export interface DiffItem {
  readonly type: string;
  readonly mesh: string;
  readonly name: string;
  readonly change: ResourceChange['change'];
  /** The resource at `from`, as the API answers it (with its version); absent when it did not exist. */
  readonly before?: Record<string, unknown>;
  readonly after?: Record<string, unknown>;
}

function changeJson({ key, change, before, after }: ResourceChange): DiffItem {
  return {
    type: key.type,
    mesh: key.mesh,
    name: key.name,
    change,
    ...(before !== undefined && { before: resourceJson(before.resource, before.version) }),
    ...(after !== undefined && { after: resourceJson(after.resource, after.version) }),
  };
}

function meshOf(query: Query): string | undefined {
  const mesh = single(query, 'mesh');
  if (mesh !== undefined && !isDnsLabel(mesh)) throw new InvalidQueryError('mesh', `mesh ${excerpt(mesh)} ${DNS_LABEL_RULE}`);
  return mesh;
}

function scopeOf(query: Query): RolloutScope {
  const scope = single(query, 'scope') ?? 'local';
  if (scope !== 'local' && scope !== 'fleet') throw new InvalidQueryError('scope', `scope must be local or fleet; got ${excerpt(scope)}`);
  return scope;
}
