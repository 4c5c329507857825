import type { FastifyInstance } from 'fastify';
import { itemJson, type ChangeWarning, type ItemJson } from '../changes/index.js';
import { keyOfWrite } from '../store/index.js';
import { authorOf, checkMeshes } from './access.js';
import type { ApiBackend } from './api-backend.js';
import { writesFromBody } from './change-body.js';
import { takes, type Query } from './query-params.js';
import { readWriteQuery, WRITE_PARAMS } from './write-query.js';

/** What a change answers once written: the revisions it spans, each write's outcome, its warnings. */
export interface ChangeAnswer {
  /** The revision it followed. */
  readonly from: number;
  /** The revision it reached: its last event's; `from` when every write was unchanged. */
  readonly revision: number;
  readonly items: readonly ItemJson[];
  readonly warnings: readonly ChangeWarning[];
}

/**
 * `POST /changes`: several resources written as one change (one batch of the log: all or none,
 * consecutive revisions), previewed with `?dryRun=true` as any write route is (issue 31).
 */
export function registerChangeRoutes(app: FastifyInstance, { changes }: Pick<ApiBackend, 'changes'>): void {
  app.post<{ Querystring: Query }>('/changes', takes(...WRITE_PARAMS), async (request) => {
    const asked = readWriteQuery(request.query);
    const writes = writesFromBody(request.body);
    checkMeshes(request, writes.map((write) => keyOfWrite(write).mesh));
    const caller = authorOf(request);
    if (asked.dryRun) return changes.preview(writes, { caller, page: asked.page });
    const { written, warnings } = await changes.write(writes, { caller, failOnWarnings: asked.failOnWarnings });
    request.log.info({ from: written.from, revision: written.revision, writes: writes.length, warnings: warnings.length }, 'change written');
    const answer: ChangeAnswer = { from: written.from, revision: written.revision, items: written.items.map((item) => itemJson(item)), warnings };
    return answer;
  });
}
