import { SignJWT } from 'jose';
import { nodeIdOf } from '../mesh/index.js';
import type { WriteOptions } from '../store/index.js';
import type { CredentialStore } from './credential-store.js';
import { checkDataplaneSubject } from './dataplane-subject.js';
import { privateKeyOf } from './key-pairs.js';
import { expiryOf, LIFETIMES } from './lifetimes.js';
import { currentSigningKey, rotateSigningKey } from './signing-keys.js';

/** The `iss` of every token Chancery signs. */
export const TOKEN_ISSUER = 'chancery';

export interface DataplaneTokenRequest {
  readonly mesh: string;
  readonly name: string;
  /** ms; default a day. */
  readonly ttl?: number;
  readonly now: number;
}

export interface IssuedDataplaneToken {
  readonly token: string;
  /** The node id the token speaks for: `<mesh>.<name>`. */
  readonly node: string;
  /** The signing key's id, the token's `kid`. */
  readonly kid: string;
  /** ISO 8601. */
  readonly expiresAt: string;
}

/**
 * Signs a token binding a stream to Dataplane `name` of `mesh` (an RS256 JWT, `sub` its node
 * id), with the mesh's newest signing key; a mesh without one gets its first key now. The
 * Dataplane must exist (`checkDataplaneSubject`): a token for a name no node has, or can have,
 * would be a credential with nothing to speak for.
 */
export async function issueDataplaneToken(store: CredentialStore, request: DataplaneTokenRequest, options: Pick<WriteOptions, 'caller'> = {}): Promise<IssuedDataplaneToken> {
  const { mesh, name, now } = request;
  checkDataplaneSubject(store, mesh, name);
  const expiresAt = expiryOf(request.ttl ?? LIFETIMES.dataplane, now);
  const key = currentSigningKey(store, mesh) ?? (await rotateSigningKey(store, mesh, options));
  const node = nodeIdOf(mesh, name);
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.resource.name })
    .setIssuer(TOKEN_ISSUER)
    .setSubject(node)
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(expiresAt / 1000))
    .sign(privateKeyOf(key.resource));
  return { token, node, kid: key.resource.name, expiresAt: new Date(Math.floor(expiresAt / 1000) * 1000).toISOString() };
}
