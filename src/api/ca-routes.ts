import type { FastifyInstance } from 'fastify';
import { meshAuthoritiesView, removeMeshAuthority, rotateMeshAuthority } from '../identity/index.js';
import { NotFoundError, type MeshState, type ResourceStore } from '../store/index.js';
import { authorOf } from './access.js';
import type { ApiBackend } from './api-backend.js';
import { fieldsOf } from './request-fields.js';

interface MeshParams {
  readonly mesh: string;
}

/**
 * A mesh's certificate authorities (docs/mtls.md): `GET /meshes/{mesh}/ca` lists them with the
 * trust bundle, `POST` adds one (rotation with overlap: it signs once every dataplane trusts
 * it), `DELETE …/ca/{id}` removes one nothing connected still holds a certificate of. A CA's
 * private key is never answered.
 */
export function registerCaRoutes(app: FastifyInstance, backend: Pick<ApiBackend, 'store' | 'sessions' | 'fleet' | 'now'>): void {
  const { store } = backend;
  app.get<{ Params: MeshParams }>('/meshes/:mesh/ca', async (request) => {
    const state = meshStateOf(store, request.params.mesh);
    return meshAuthoritiesView(state, await connectedDataplanes(backend, state.mesh.resource.name));
  });
  app.post<{ Params: MeshParams }>('/meshes/:mesh/ca', async (request, reply) => {
    fieldsOf(request.body, []);
    const added = await rotateMeshAuthority(store, request.params.mesh, backend.now(), { caller: authorOf(request) });
    request.log.info({ mesh: added.resource.mesh, id: added.resource.name, by: authorOf(request) }, 'mesh CA added: it signs once every dataplane trusts it');
    const state = meshStateOf(store, request.params.mesh);
    const view = meshAuthoritiesView(state, await connectedDataplanes(backend, state.mesh.resource.name));
    return reply.code(201).send(view.items.find((item) => item.id === added.resource.name));
  });
  app.delete<{ Params: MeshParams & { readonly id: string } }>('/meshes/:mesh/ca/:id', async (request, reply) => {
    const state = meshStateOf(store, request.params.mesh);
    const connected = await connectedDataplanes(backend, state.mesh.resource.name);
    await removeMeshAuthority(store, state, request.params.id, connected, { caller: authorOf(request) });
    request.log.info({ ...request.params, by: authorOf(request) }, 'mesh CA removed: no dataplane trusts it any more');
    return reply.code(204).send();
  });
}

function meshStateOf(store: ResourceStore, mesh: string): MeshState {
  const state = store.projection.meshes.get(mesh);
  if (state === undefined) throw new NotFoundError({ type: 'Mesh', mesh, name: mesh });
  return state;
}

/** The dataplanes of `mesh` some live instance serves now: this one's sessions and the others' records. */
async function connectedDataplanes(backend: Pick<ApiBackend, 'sessions' | 'fleet'>, mesh: string): Promise<ReadonlySet<string>> {
  const prefix = `${mesh}.`;
  const connected = new Set<string>();
  const add = (node: string, state: string) => {
    if (state === 'serving' && node.startsWith(prefix)) connected.add(node.slice(prefix.length));
  };
  for (const { node, state } of backend.sessions.summaries()) add(node, state);
  for (const { node, state } of await backend.fleet.others()) add(node, state);
  return connected;
}
