import type { FastifyInstance, FastifyReply } from 'fastify';
import { resourceJson as messageJson, type Resource, type ResourceKey } from '../mesh/index.js';
import { asSeq, NotFoundError, type ResourceStore, type Stored, type Written } from '../store/index.js';
import { authorOf } from './access.js';
import { deletePrecondition, etagOf, putPrecondition } from './preconditions.js';
import { integer, onlyKnown, type Query } from './query-params.js';
import { resourceFromBody } from './resource-from-body.js';

/** The headers a write is answered with, beside its status. */
export const WRITE_HEADERS = { outcome: 'chancery-outcome', revision: 'chancery-revision' } as const;

interface MeshParams {
  readonly mesh: string;
}
interface DataplaneParams extends MeshParams {
  readonly name: string;
}

type KeyOf<TParams> = (params: TParams) => ResourceKey;

const meshKey: KeyOf<MeshParams> = ({ mesh }) => ({ type: 'Mesh', mesh, name: mesh });
const dataplaneKey: KeyOf<DataplaneParams> = ({ mesh, name }) => ({ type: 'Dataplane', mesh, name });

/**
 * Meshes and Dataplanes (DESIGN §7). The URL path is a resource's identity; a resource is
 * answered as `{ ...resource, version }` with `ETag: "<version>"`, a list as `{ items }`.
 * `GET` with `?revision=R` answers the resource as it was at store revision R.
 */
export function registerResourceRoutes(app: FastifyInstance, store: ResourceStore): void {
  app.get('/meshes', async () => ({ items: store.list('Mesh').map(resourceJson) }));
  app.get<{ Params: MeshParams }>('/meshes/:mesh/dataplanes', async (request) => {
    const key = meshKey(request.params);
    // An empty list would hide a typo in the mesh name.
    if (store.get(key) === undefined) throw new NotFoundError(key);
    return { items: store.list('Dataplane', key.mesh).map(resourceJson) };
  });
  routesFor(app, store, '/meshes/:mesh', meshKey);
  routesFor(app, store, '/meshes/:mesh/dataplanes/:name', dataplaneKey);
}

// fastify's conditional route types do not resolve for a type parameter, hence `as TParams`.
function routesFor<TParams extends MeshParams>(app: FastifyInstance, store: ResourceStore, url: string, keyOf: KeyOf<TParams>): void {
  app.get(url, async (request, reply) => {
    const key = keyOf(request.params as TParams);
    const query = request.query as Query;
    onlyKnown(query, ['revision']);
    const revision = integer(query, 'revision', { min: 0 });
    // `?revision=R`: the resource as it was at store revision R (issue 3, history API).
    const stored = revision === undefined ? store.get(key) : await store.getAt(key, asSeq(revision));
    if (stored === undefined) throw new NotFoundError(key, revision === undefined ? undefined : asSeq(revision));
    return sendResource(reply, stored);
  });

  app.put(url, async (request, reply) => {
    const key = keyOf(request.params as TParams);
    const { resource, version } = resourceFromBody(request.body, key);
    const expected = putPrecondition(request.headers, version);
    const written = await store.write([{ kind: 'upserted', resource, expected }], { caller: authorOf(request) });
    const { outcome, stored } = written.items[0]!;
    request.log.info({ key, version: stored!.version, seq: stored!.seq, outcome }, 'resource written');
    // 201 is reported, not enforced: a create racing this one may make both answer it.
    return sendResource(withOutcome(reply.code(outcome === 'created' ? 201 : 200), written), stored!);
  });

  app.delete(url, async (request, reply) => {
    const key = keyOf(request.params as TParams);
    const expected = deletePrecondition(request.headers);
    const written = await store.write([{ kind: 'deleted', key, expected }], { caller: authorOf(request) });
    request.log.info({ key, seq: written.revision }, 'resource deleted');
    return withOutcome(reply.code(204), written).send();
  });
}

/**
 * Every write answers what it did and the store revision it reached (DESIGN §7): `unchanged`
 * appended nothing, and its revision is the store's as it answered.
 */
function withOutcome(reply: FastifyReply, written: Written): FastifyReply {
  return reply.header(WRITE_HEADERS.outcome, written.items[0]!.outcome).header(WRITE_HEADERS.revision, String(written.revision));
}

/** A stored resource as the API answers it: the JSON mapping of its chancery.v1 message, with its version (proto/). */
function resourceJson(stored: Stored<Resource>): Record<string, unknown> {
  return messageJson(stored.resource, stored.version);
}

function sendResource(reply: FastifyReply, stored: Stored<Resource>): FastifyReply {
  return reply.header('etag', etagOf(stored.version)).send(resourceJson(stored));
}
