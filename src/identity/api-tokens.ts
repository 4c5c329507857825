import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { API_ROLES, isDnsLabel, DNS_LABEL_RULE, type ApiRole, type ApiToken, type Valid } from '../mesh/index.js';
import type { Stored, WriteOptions } from '../store/index.js';
import type { CredentialStore } from './credential-store.js';
import { InvalidIdentityRequestError } from './errors.js';
import { expiryOf, LIFETIMES } from './lifetimes.js';

/** Every API token starts so, which secret scanners can match on. */
const PREFIX = 'chancery';

export interface ApiTokenRequest {
  readonly name: string;
  readonly role: ApiRole;
  /** For a writer: the meshes it may write (at least one). */
  readonly meshes?: readonly string[];
  /** ms; default a year. */
  readonly ttl?: number;
  readonly now: number;
}

/** Who an API request comes from, once its token checked out. */
export interface ApiCaller {
  readonly name: string;
  readonly role: ApiRole;
  readonly meshes: readonly string[];
}

export interface IssuedApiToken extends ApiCaller {
  /** `chancery.<name>.<secret>`: shown once, never stored. */
  readonly token: string;
  /** ISO 8601. */
  readonly expiresAt: string;
}

/**
 * Makes an API token: stores its name, role, meshes and the SHA-256 of a random secret, and
 * returns the token, which nothing can recover later. Rejects with
 * `InvalidIdentityRequestError` naming the field, and with `VersionConflictError` when the name
 * is taken (revoke that token first).
 */
export async function issueApiToken(store: CredentialStore, request: ApiTokenRequest, options: Pick<WriteOptions, 'caller'> = {}): Promise<IssuedApiToken> {
  const { name, role, now } = request;
  if (!isDnsLabel(name)) throw new InvalidIdentityRequestError('name', DNS_LABEL_RULE);
  if (!API_ROLES.includes(role)) throw new InvalidIdentityRequestError('role', `must be one of ${API_ROLES.join(', ')}`);
  const meshes = [...new Set(request.meshes ?? [])].sort();
  if (role === 'writer' && meshes.length === 0) throw new InvalidIdentityRequestError('meshes', 'must name at least one mesh for a writer');
  if (role !== 'writer' && meshes.length > 0) throw new InvalidIdentityRequestError('meshes', `are only for a writer: ${role === 'admin' ? 'an admin writes every mesh' : 'a reader writes none'}`);
  const invalid = meshes.find((mesh) => !isDnsLabel(mesh));
  if (invalid !== undefined) throw new InvalidIdentityRequestError('meshes', `"${invalid}" ${DNS_LABEL_RULE}`);
  const expiresAt = new Date(expiryOf(request.ttl ?? LIFETIMES.api, now)).toISOString();
  const secret = randomBytes(32).toString('base64url');
  const token: ApiToken = { type: 'ApiToken', name, role, meshes, secretHash: sha256(secret), expiresAt };
  await store.put(Object.freeze(token) as Valid<ApiToken>, { ...options, expected: 'absent' });
  return { token: `${PREFIX}.${name}.${secret}`, name, role, meshes, expiresAt };
}

export type ApiAuthentication = { readonly ok: true; readonly caller: ApiCaller } | { readonly ok: false; readonly reason: string };

/** Checks an `Authorization` header against the stored API tokens. */
export function authenticateApiCaller(store: Pick<CredentialStore, 'get'>, authorization: string | undefined, now: number): ApiAuthentication {
  if (authorization === undefined) return { ok: false, reason: 'no Authorization header: send "Authorization: Bearer <API token>"' };
  const match = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (match === null) return { ok: false, reason: 'the Authorization header must be "Bearer <API token>"' };
  const [prefix, name, secret, ...rest] = match[1]!.split('.');
  if (prefix !== PREFIX || name === undefined || secret === undefined || rest.length > 0) {
    return { ok: false, reason: 'not a Chancery API token (chancery.<name>.<secret>)' };
  }
  const stored = store.get({ type: 'ApiToken', mesh: name, name }) as Stored<ApiToken> | undefined;
  // The same answer whether the name or the secret is wrong: a caller learns nothing of which names exist.
  if (stored === undefined || !sameDigest(stored.resource.secretHash, sha256(secret))) return { ok: false, reason: 'the API token is not valid (revoked, or never issued)' };
  const { role, meshes, expiresAt } = stored.resource;
  if (Date.parse(expiresAt) <= now) return { ok: false, reason: `the API token "${name}" expired at ${expiresAt}` };
  return { ok: true, caller: { name, role, meshes } };
}

/** An API token as the API lists it: never its hash. */
export function publicApiToken(stored: Stored<ApiToken>) {
  const { name, role, meshes, expiresAt } = stored.resource;
  return { name, role, meshes, expiresAt, createdAt: stored.updatedAt };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function sameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
