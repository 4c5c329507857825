import type { FastifyInstance } from 'fastify';
import { POLICY_PLURALS, POLICY_TYPES, selects, type Policy, type PolicyType } from '../policies/index.js';
import type { ChangeDesk } from '../changes/index.js';
import { NotFoundError, type ResourceStore } from '../store/index.js';
import type { ApiBackend } from './api-backend.js';
import { history, PAGE } from './history-routes.js';
import { takes, type Query } from './query-params.js';
import { meshKey, resourceJson, routesFor, type DataplaneParams, type MeshParams } from './resource-routes.js';

/**
 * Traffic policies, at Kuma's paths (DESIGN §7, wave 3): for each type its collection
 * `/meshes/{mesh}/<plural>` (`meshtimeouts`, `meshretries`, …), and each policy at
 * `/meshes/{mesh}/<plural>/{name}` with `GET` (`?revision=R`), `PUT`, `DELETE` and `/history`,
 * exactly as a Dataplane is, and `/_resources/dataplanes`: the dataplanes it selects.
 */
export function registerPolicyRoutes(app: FastifyInstance, { store, changes }: Pick<ApiBackend, 'store' | 'changes'>): void {
  for (const type of POLICY_TYPES) registerType(app, store, changes, type);
}

function registerType(app: FastifyInstance, store: ResourceStore, changes: ChangeDesk, type: PolicyType): void {
  const collection = `/meshes/:mesh/${POLICY_PLURALS[type]}`;
  app.get<{ Params: MeshParams }>(collection, async (request) => {
    const key = meshKey(request.params);
    // An empty list would hide a typo in the mesh name.
    if (store.get(key) === undefined) throw new NotFoundError(key);
    return { items: store.list(type, key.mesh).map(resourceJson) };
  });
  const keyOf = ({ mesh, name }: DataplaneParams) => ({ type, mesh, name });
  routesFor(app, store, changes, `${collection}/:name`, keyOf);
  app.get<{ Params: DataplaneParams; Querystring: Query }>(`${collection}/:name/history`, takes(...PAGE), async (request) =>
    history(store, keyOf(request.params), request.query),
  );
  // Kuma's path for the dataplanes a policy selects: `chancery apply` warns when there are none.
  app.get<{ Params: DataplaneParams }>(`${collection}/:name/_resources/dataplanes`, async (request) => {
    const key = keyOf(request.params);
    const policy = store.get(key);
    if (policy === undefined) throw new NotFoundError(key);
    const { targetRef } = (policy.resource as Policy).spec;
    const items = store
      .list('Dataplane', key.mesh)
      .filter(({ resource }) => selects(targetRef, resource.networking))
      .map(({ resource }) => ({ mesh: resource.mesh, name: resource.name }));
    return { items, total: items.length };
  });
}
