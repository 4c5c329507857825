import type { FastifyReply } from 'fastify';
import { itemJson, NODES_PAGE, type ChangeWarning, type DeskWritten, type ItemJson, type NodePage } from '../changes/index.js';
import { InvalidQueryError } from './errors.js';
import { flag, integer, type Query } from './query-params.js';

/** The query parameters every write route takes (`takes(...WRITE_PARAMS)`; DESIGN §7: `?dryRun=true` on every write route). */
export const WRITE_PARAMS = ['dryRun', 'failOnWarnings', 'offset', 'limit'] as const;

/** How a write is asked for: made, or only previewed (a page of its affected nodes detailed). */
export type WriteQuery =
  | { readonly dryRun: false; readonly failOnWarnings: boolean }
  | { readonly dryRun: true; readonly page: NodePage };

/**
 * Reads a write route's query: `dryRun=true` previews the write and appends nothing (`offset`
 * and `limit` page its affected nodes); `failOnWarnings=true` refuses a write that has warnings.
 */
export function readWriteQuery(query: Query): WriteQuery {
  const dryRun = flag(query, 'dryRun') ?? false;
  const failOnWarnings = flag(query, 'failOnWarnings') ?? false;
  const offset = integer(query, 'offset', { min: 0 });
  const limit = integer(query, 'limit', { min: 0, max: NODES_PAGE.max });
  if (!dryRun) {
    const paged = offset !== undefined ? 'offset' : limit !== undefined ? 'limit' : undefined;
    if (paged !== undefined) throw new InvalidQueryError(paged, `${paged} pages a dry run's nodes: it needs dryRun=true`);
    return { dryRun, failOnWarnings };
  }
  // A dry run refuses nothing on warnings: it reports them.
  return { dryRun, page: { offset: offset ?? 0, limit: limit ?? NODES_PAGE.default } };
}

/**
 * A write's warnings as HTTP warnings, one `Warning: 299` header each (RFC 9110's miscellaneous
 * persistent warning, as Kubernetes answers them): the body stays the resource it always was.
 */
export function withWarnings(reply: FastifyReply, warnings: readonly ChangeWarning[]): FastifyReply {
  if (warnings.length === 0) return reply;
  return reply.header('warning', warnings.map((warning) => `299 chancery "${warning.message.replace(/["\\]/g, '\\$&')}"`));
}

/** What a write of several resources answers (`POST /apply`, a revert): the revisions it spans, each write's outcome, its warnings. */
export interface WriteAnswer {
  /** The revision it followed. */
  readonly from: number;
  /** The revision it reached: its last event's; `from` when every write was unchanged. */
  readonly revision: number;
  readonly items: readonly ItemJson[];
  readonly warnings: readonly ChangeWarning[];
}

/** A desk's write as its answer. */
export function writeAnswer({ written, warnings }: DeskWritten): WriteAnswer {
  return { from: written.from, revision: written.revision, items: written.items.map((item) => itemJson(item)), warnings };
}
