import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isLoopback } from '../common/index.js';
import type { ApiAuthentication, ApiCaller } from '../identity/index.js';
import { CERTIFICATE_ROUTE } from './certificate-routes.js';
import { ForbiddenError, UnauthenticatedError } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who sent the request, when the API authenticates callers. */
    caller?: ApiCaller;
  }
}

/** Whether the API asks callers who they are (`--api-auth`). */
export type ApiAccess =
  | { readonly mode: 'none' }
  | {
      readonly mode: 'token';
      /** Checks an `Authorization` header against the API tokens in the store. */
      authenticate(authorization: string | undefined): ApiAuthentication;
      /** Told of each 401 and 403. */
      onDenied?(status: 401 | 403): void;
    };

/**
 * The access an API listening on `host` gets (docs/security.md): `apiAuth` when given; else none
 * on a loopback address, which only this host can reach, and tokens on any other.
 */
export function accessFor(
  host: string,
  apiAuth: 'none' | 'token' | undefined,
  tokens: { authenticate(authorization: string | undefined): ApiAuthentication; onDenied?(status: 401 | 403): void },
): ApiAccess {
  const mode = apiAuth ?? (isLoopback(host) ? 'none' : 'token');
  return mode === 'none' ? { mode } : { mode, authenticate: tokens.authenticate, ...(tokens.onDenied && { onDenied: tokens.onDenied }) };
}

/**
 * Probes, scrapes and the UI's static files: open to anyone (docs/security.md, "Securing
 * Chancery"); and the route a dataplane's agent asks a certificate on, which checks the
 * dataplane's own credentials as the xDS port does (certificate-routes.ts).
 */
const OPEN_ROUTES = new Set(['/healthz', '/readyz', '/metrics', '/ui', '/ui/', '/ui/:file', CERTIFICATE_ROUTE]);

/**
 * Write routes whose meshes are in the body or the query, not the path: a writer passes the gate,
 * and the handler checks each mesh it would write (`POST /apply` each item's, a revert `checkMeshes`).
 */
const BODY_MESH_ROUTES = new Set(['/apply', '/revisions/:revision/revert']);

/** Routes only an admin may call, whatever the method: callers and the keys that sign tokens. */
const ADMIN_ROUTES = [/^\/api-tokens/, /^\/meshes\/:mesh\/signing-keys/];
/** Routes anyone may read and only an admin may write: a mesh's CAs (their keys are never answered). */
const ADMIN_WRITE_ROUTES = [/^\/meshes\/:mesh\/ca(\/|$)/];

/**
 * The API's gate (DESIGN §10): with tokens, every route but the open ones needs a valid API
 * token (401), and its role must allow the call (403). A reader may GET; a writer may also
 * write the meshes its token names (their Dataplanes, tokens and service accounts); an admin
 * may do anything, and alone manage API tokens and signing keys.
 */
export function registerAccess(app: FastifyInstance, access: ApiAccess): void {
  if (access.mode === 'none') return;
  app.decorateRequest('caller', undefined);
  app.addHook('onRequest', async (request) => {
    const route = request.routeOptions.url;
    if (route !== undefined && OPEN_ROUTES.has(route)) return;
    const authentication = access.authenticate(authorizationOf(request, route));
    if (!authentication.ok) {
      access.onDenied?.(401);
      throw new UnauthenticatedError(authentication.reason);
    }
    const { caller } = authentication;
    const meshesInBody = route !== undefined && BODY_MESH_ROUTES.has(route) && caller.role === 'writer';
    const refusal = meshesInBody ? undefined : refusalOf(caller, request.method, route, (request.params as { mesh?: string }).mesh);
    if (refusal !== undefined) {
      access.onDenied?.(403);
      throw new ForbiddenError(caller, refusal);
    }
    request.caller = caller;
  });
}

/** Why `caller` may not make this call; undefined when it may. */
export function refusalOf(caller: ApiCaller, method: string, route: string | undefined, mesh: string | undefined): string | undefined {
  if (caller.role === 'admin') return undefined;
  const adminOnly = route !== undefined && ADMIN_ROUTES.some((pattern) => pattern.test(route));
  if (adminOnly) return 'only an admin may manage API tokens and signing keys';
  if (method === 'GET' || method === 'HEAD') return undefined;
  if (route !== undefined && ADMIN_WRITE_ROUTES.some((pattern) => pattern.test(route))) return 'only an admin may rotate or remove a mesh’s CAs';
  if (caller.role === 'reader') return 'a reader may only read';
  if (mesh === undefined || !caller.meshes.includes(mesh)) {
    return `a writer may write only its meshes (${caller.meshes.join(', ')})${mesh === undefined ? '' : `, not ${mesh}`}`;
  }
  return undefined;
}

/**
 * Refuses (403) a write a writer's token does not cover: one of `meshes` is not its. The check
 * of routes whose meshes the gate cannot see (`BODY_MESH_ROUTES`); `undefined` stands for
 * "every mesh" (a revert of the whole store), which only an admin may write.
 */
export function checkMeshes(request: FastifyRequest, meshes: Iterable<string> | undefined): void {
  const { caller } = request;
  if (caller === undefined || caller.role === 'admin') return;
  const outside = meshes === undefined ? undefined : [...meshes].find((mesh) => !caller.meshes.includes(mesh));
  if (meshes !== undefined && outside === undefined) return;
  const not = outside === undefined ? ', not every mesh' : `, not ${outside}`;
  throw new ForbiddenError(caller, `a writer may write only its meshes (${caller.meshes.join(', ')})${not}`);
}

/** Who the caller is as the event log records it: its token's name, or its address without tokens. */
export function authorOf(request: FastifyRequest): string {
  return request.caller?.name ?? request.ip;
}

/**
 * The request's `Authorization` header. A browser's EventSource cannot set headers, so the live
 * feed also takes the token as `access_token` (RFC 6750 §2.3); no other route does, keeping
 * tokens out of URLs and their logs.
 */
function authorizationOf(request: FastifyRequest, route: string | undefined): string | undefined {
  const header = request.headers.authorization;
  if (header !== undefined || route !== '/sessions/events') return header;
  const token = (request.query as Record<string, unknown>)['access_token'];
  return typeof token === 'string' ? `Bearer ${token}` : undefined;
}
