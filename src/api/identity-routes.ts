import type { FastifyInstance } from 'fastify';
import {
  currentSigningKey,
  issueApiToken,
  issueDataplaneToken,
  issueServiceAccount,
  parseTtl,
  publicApiToken,
  publicServiceAccountKey,
  publicSigningKey,
  rotateSigningKey,
} from '../identity/index.js';
import type { ApiRole, ResourceKey } from '../mesh/index.js';
import { NotFoundError, type ResourceStore } from '../store/index.js';
import { authorOf } from './access.js';
import { fieldsOf, text, textList } from './request-fields.js';

interface MeshParams {
  readonly mesh: string;
}
interface DataplaneParams extends MeshParams {
  readonly name: string;
}
interface KeyParams extends MeshParams {
  readonly kid: string;
}

/**
 * Identity (DESIGN §10): dataplane tokens and service accounts for a Dataplane, a mesh's signing
 * keys (rotation and revocation), and API tokens. Secrets are answered once, when made; lists
 * never show a private key or a token's hash.
 */
export function registerIdentityRoutes(app: FastifyInstance, { store, now }: { readonly store: ResourceStore; readonly now: () => number }): void {
  app.post<{ Params: DataplaneParams }>('/meshes/:mesh/dataplanes/:name/token', async (request, reply) => {
    const { ttl } = fieldsOf(request.body, ['ttl']);
    const issued = await issueDataplaneToken(
      store,
      { ...request.params, now: now(), ...(ttl !== undefined && { ttl: parseTtl(ttl) }) },
      { caller: authorOf(request) },
    );
    request.log.info({ node: issued.node, kid: issued.kid, expiresAt: issued.expiresAt, by: authorOf(request) }, 'dataplane token issued');
    return reply.code(201).send(issued);
  });

  app.post<{ Params: DataplaneParams }>('/meshes/:mesh/dataplanes/:name/service-account', async (request, reply) => {
    fieldsOf(request.body, []);
    const { file, key } = await issueServiceAccount(store, request.params, { caller: authorOf(request) });
    request.log.info({ node: file.client_email, kid: key.resource.name, by: authorOf(request) }, 'service account issued');
    return reply.code(201).send(file);
  });

  app.get<{ Params: MeshParams }>('/meshes/:mesh/signing-keys', async (request) => {
    const { mesh } = meshOf(store, request.params);
    const current = currentSigningKey(store, mesh);
    return { items: store.list('SigningKey', mesh).map((key) => publicSigningKey(key, current)) };
  });
  app.post<{ Params: MeshParams }>('/meshes/:mesh/signing-keys', async (request, reply) => {
    fieldsOf(request.body, []);
    const key = await rotateSigningKey(store, request.params.mesh, { caller: authorOf(request) });
    request.log.info({ mesh: key.resource.mesh, kid: key.resource.name, by: authorOf(request) }, 'signing key added: it signs from now on');
    return reply.code(201).send(publicSigningKey(key, key));
  });
  app.delete<{ Params: KeyParams }>('/meshes/:mesh/signing-keys/:kid', async (request, reply) => {
    await store.delete({ type: 'SigningKey', mesh: request.params.mesh, name: request.params.kid }, { caller: authorOf(request) });
    request.log.info({ ...request.params, by: authorOf(request) }, 'signing key removed: the tokens it signed are revoked');
    return reply.code(204).send();
  });

  app.get<{ Params: MeshParams }>('/meshes/:mesh/service-account-keys', async (request) => {
    const { mesh } = meshOf(store, request.params);
    return { items: store.list('ServiceAccountKey', mesh).map(publicServiceAccountKey) };
  });
  app.delete<{ Params: KeyParams }>('/meshes/:mesh/service-account-keys/:kid', async (request, reply) => {
    await store.delete({ type: 'ServiceAccountKey', mesh: request.params.mesh, name: request.params.kid }, { caller: authorOf(request) });
    request.log.info({ ...request.params, by: authorOf(request) }, 'service account key removed');
    return reply.code(204).send();
  });

  app.get('/api-tokens', async () => ({ items: store.list('ApiToken').map(publicApiToken) }));
  app.post('/api-tokens', async (request, reply) => {
    const fields = fieldsOf(request.body, ['name', 'role', 'meshes', 'ttl']);
    const meshes = textList(fields, 'meshes');
    const issued = await issueApiToken(
      store,
      {
        name: text(fields, 'name'),
        // issueApiToken refuses a role it does not know, naming the field.
        role: text(fields, 'role') as ApiRole,
        ...(meshes !== undefined && { meshes }),
        ...(fields['ttl'] !== undefined && { ttl: parseTtl(fields['ttl']) }),
        now: now(),
      },
      { caller: authorOf(request) },
    );
    request.log.info({ name: issued.name, role: issued.role, meshes: issued.meshes, by: authorOf(request) }, 'API token issued');
    return reply.code(201).send(issued);
  });
  app.delete<{ Params: { name: string } }>('/api-tokens/:name', async (request, reply) => {
    const { name } = request.params;
    await store.delete({ type: 'ApiToken', mesh: name, name }, { caller: authorOf(request) });
    request.log.info({ name, by: authorOf(request) }, 'API token revoked');
    return reply.code(204).send();
  });
}

function meshOf(store: ResourceStore, { mesh }: MeshParams): { mesh: string } {
  const key: ResourceKey = { type: 'Mesh', mesh, name: mesh };
  // An empty list would hide a typo in the mesh name.
  if (store.get(key) === undefined) throw new NotFoundError(key);
  return { mesh };
}
