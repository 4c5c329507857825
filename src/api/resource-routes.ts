import type { FastifyInstance, FastifyReply } from 'fastify';
import { resourceJson as messageJson, type Resource, type ResourceKey } from '../mesh/index.js';
import { asSeq, NotFoundError, type ResourceStore, type Stored, type Written } from '../store/index.js';
import type { ChangeDesk } from '../changes/index.js';
import { authorOf } from './access.js';
import type { ApiBackend } from './api-backend.js';
import { deletePrecondition, etagOf, putPrecondition } from './preconditions.js';
import { integer, type Query, takes } from './query-params.js';
import { resourceFromBody } from './resource-from-body.js';
import { readWriteQuery, withWarnings, WRITE_PARAMS } from './write-query.js';

/** The headers a write is answered with, beside its status. */
export const WRITE_HEADERS = { outcome: 'chancery-outcome', revision: 'chancery-revision', from: 'chancery-from-revision' } as const;

export interface MeshParams {
  readonly mesh: string;
}
export interface DataplaneParams extends MeshParams {
  readonly name: string;
}

export type KeyOf<TParams> = (params: TParams) => ResourceKey;

export const meshKey: KeyOf<MeshParams> = ({ mesh }) => ({ type: 'Mesh', mesh, name: mesh });
const dataplaneKey: KeyOf<DataplaneParams> = ({ mesh, name }) => ({ type: 'Dataplane', mesh, name });

/**
 * Meshes and Dataplanes (DESIGN §7). The URL path is a resource's identity; a resource is
 * answered as `{ ...resource, version }` with `ETag: "<version>"`, a list as `{ items }`.
 * `GET` with `?revision=R` answers the resource as it was at store revision R.
 */
export function registerResourceRoutes(app: FastifyInstance, { store, changes }: Pick<ApiBackend, 'store' | 'changes'>): void {
  app.get('/meshes', async () => ({ items: store.list('Mesh').map(resourceJson) }));
  app.get<{ Params: MeshParams }>('/meshes/:mesh/dataplanes', async (request) => {
    const key = meshKey(request.params);
    // An empty list would hide a typo in the mesh name.
    if (store.get(key) === undefined) throw new NotFoundError(key);
    return { items: store.list('Dataplane', key.mesh).map(resourceJson) };
  });
  routesFor(app, store, changes, '/meshes/:mesh', meshKey);
  routesFor(app, store, changes, '/meshes/:mesh/dataplanes/:name', dataplaneKey);
}

/** `GET`, `PUT` and `DELETE` of one resource at `url`, whose parameters `keyOf` reads as its key. */
// fastify's conditional route types do not resolve for a type parameter, hence `as TParams`.
export function routesFor<TParams extends MeshParams>(app: FastifyInstance, store: ResourceStore, changes: ChangeDesk, url: string, keyOf: KeyOf<TParams>): void {
  app.get(url, takes('revision'), async (request, reply) => {
    const key = keyOf(request.params as TParams);
    const query = request.query as Query;
    const revision = integer(query, 'revision', { min: 0 });
    // `?revision=R`: the resource as it was at store revision R (issue 3, history API).
    const stored = revision === undefined ? store.get(key) : await store.getAt(key, asSeq(revision));
    if (stored === undefined) throw new NotFoundError(key, revision === undefined ? undefined : asSeq(revision));
    return sendResource(reply, stored);
  });

  // `?dryRun=true` answers what the write would do and appends nothing (issue 31).
  app.put(url, takes(...WRITE_PARAMS), async (request, reply) => {
    const key = keyOf(request.params as TParams);
    const asked = readWriteQuery(request.query as Query);
    const { resource, version } = resourceFromBody(request.body, key);
    const writes = [{ kind: 'upserted', resource, expected: putPrecondition(request.headers, version) }] as const;
    const caller = authorOf(request);
    if (asked.dryRun) return changes.preview(writes, { caller, page: asked.page });
    const { written, warnings } = await changes.write(writes, { caller, failOnWarnings: asked.failOnWarnings });
    const { outcome, stored } = written.items[0]!;
    request.log.info({ key, version: stored!.version, seq: stored!.seq, outcome, warnings: warnings.length }, 'resource written');
    // 201 is reported, not enforced: a create racing this one may make both answer it.
    return sendResource(withWarnings(withOutcome(reply.code(outcome === 'created' ? 201 : 200), written), warnings), stored!);
  });

  app.delete(url, takes(...WRITE_PARAMS), async (request, reply) => {
    const key = keyOf(request.params as TParams);
    const asked = readWriteQuery(request.query as Query);
    const writes = [{ kind: 'deleted', key, expected: deletePrecondition(request.headers) }] as const;
    const caller = authorOf(request);
    if (asked.dryRun) return changes.preview(writes, { caller, page: asked.page });
    const { written, warnings } = await changes.write(writes, { caller, failOnWarnings: asked.failOnWarnings });
    request.log.info({ key, seq: written.revision, warnings: warnings.length }, 'resource deleted');
    return withWarnings(withOutcome(reply.code(204), written), warnings).send();
  });
}

/**
 * Every write answers what it did and the store revisions it spans (DESIGN §7): the revision it
 * followed and the one it reached (`GET /revisions/{R}?since=` follows it across the fleet).
 * `unchanged` appended nothing: both are the store's revision as it answered.
 */
function withOutcome(reply: FastifyReply, written: Written): FastifyReply {
  return reply
    .header(WRITE_HEADERS.outcome, written.items[0]!.outcome)
    .header(WRITE_HEADERS.from, String(written.from))
    .header(WRITE_HEADERS.revision, String(written.revision));
}

/** A stored resource as the API answers it: the JSON mapping of its chancery.v1 message, with its version (proto/). */
export function resourceJson(stored: Stored<Resource>): Record<string, unknown> {
  return messageJson(stored.resource, stored.version);
}

function sendResource(reply: FastifyReply, stored: Stored<Resource>): FastifyReply {
  return reply.header('etag', etagOf(stored.version)).send(resourceJson(stored));
}
