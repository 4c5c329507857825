import type { FastifyInstance } from 'fastify';
import { explainPolicies, nodeIdOf, type ResourceKey } from '../mesh/index.js';
import { NotFoundError, type ResourceStore } from '../store/index.js';
import type { DataplaneParams } from './resource-routes.js';

/**
 * `GET /meshes/{mesh}/dataplanes/{name}/policies` (DESIGN §7, `chancery inspect NODE
 * --policies`): what the policies did to the dataplane at the store's current revision, per
 * inbound and outbound, field by field, computed from the plans the generator renders.
 */
export function registerPolicyExplanationRoutes(app: FastifyInstance, store: ResourceStore): void {
  app.get<{ Params: DataplaneParams }>('/meshes/:mesh/dataplanes/:name/policies', async (request) => {
    const { mesh, name } = request.params;
    const key: ResourceKey = { type: 'Dataplane', mesh, name };
    if (store.get(key) === undefined) throw new NotFoundError(key);
    const result = explainPolicies(nodeIdOf(mesh, name), store.projection);
    // The projection read above may have moved on without it: as good as not found.
    if (!result.ok) throw new NotFoundError(key);
    return result.policies;
  });
}
