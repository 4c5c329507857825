import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { parseNodeId, type Mesh, type ServiceAccountKey, type SigningKey } from '../mesh/index.js';
import type { Stored } from '../store/index.js';
import { expiredRefusal, type Admission, type Refusal, type RefusalReason, type StreamAdmission, type StreamAuthentication } from '../xds/index.js';
import type { CredentialStore } from './credential-store.js';
import { TOKEN_ISSUER } from './dataplane-tokens.js';
import { publicKeyOf } from './key-pairs.js';

export interface StreamAuthenticatorOptions {
  readonly store: Pick<CredentialStore, 'get'>;
  /** Epoch ms: what token expiry is checked against. */
  readonly now: () => number;
  /**
   * The host names clients reach the xDS port by (its TLS certificate's names): the hosts a
   * service account's JWT may name as its audience. Empty without TLS, over which neither gRPC
   * client sends one.
   */
  readonly audienceHosts: () => readonly string[];
}

/** The paths of the audiences the gRPC clients put in their self-signed JWTs (reference/identity.md §2.3). */
const AUDIENCE_PATHS = new Set(['/', '/envoy.service.discovery.v3.AggregatedDiscoveryService']);

const ADMITTED_OPEN: Admission = { ok: true, authentication: { by: 'none' } };

/**
 * Decides who may speak on the xDS port (DESIGN §10). A node of a mesh with `dataplaneAuth:
 * token` must send a JWT in its stream's `authorization` metadata: a token Chancery signed with
 * one of the mesh's signing keys, or one it signed itself with a service account's key
 * registered for its Dataplane. Either must name the node (`sub`), be unexpired and verify
 * with a key the mesh still has: removing a key revokes what it signed.
 */
export class StreamAuthenticator implements StreamAdmission {
  readonly #options: StreamAuthenticatorOptions;

  constructor(options: StreamAuthenticatorOptions) {
    this.#options = options;
  }

  admit(node: string, authorization: string | undefined): Admission | Promise<Admission> {
    const mesh = meshOf(node);
    if (mesh === undefined || this.#dataplaneAuth(mesh) !== 'token') return ADMITTED_OPEN;
    if (authorization === undefined) {
      return refused('UNAUTHENTICATED', 'token-missing', `mesh "${mesh}" requires a dataplane token: send "authorization: Bearer <token>" metadata (chancery token issue)`);
    }
    const bearer = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
    if (bearer === undefined) return refused('UNAUTHENTICATED', 'token-malformed', 'the authorization metadata must be "Bearer <token>"');
    let kid: unknown;
    let alg: unknown;
    try {
      ({ kid, alg } = decodeProtectedHeader(bearer));
      decodeJwt(bearer);
    } catch {
      return refused('UNAUTHENTICATED', 'token-malformed', 'the bearer token is not a JWT');
    }
    if (alg !== 'RS256' || typeof kid !== 'string') return refused('UNAUTHENTICATED', 'token-malformed', 'the token must be an RS256 JWT with a kid');
    const key = this.#key(mesh, kid);
    if (key === undefined) {
      return refused('UNAUTHENTICATED', 'key-unknown', `the token's key "${kid}" is not one of mesh "${mesh}"'s: it was removed, which revokes its tokens, or never existed`);
    }
    return this.#verify(bearer, key, node);
  }

  recheck(node: string, authentication: StreamAuthentication): Refusal | undefined {
    const mesh = meshOf(node);
    if (mesh === undefined) return undefined;
    if (authentication.by === 'none') {
      return this.#dataplaneAuth(mesh) === 'token'
        ? { code: 'UNAUTHENTICATED', reason: 'auth-required', message: `mesh "${mesh}" now requires a dataplane token; reconnect with one` }
        : undefined;
    }
    if (this.#key(mesh, authentication.key) === undefined) {
      return { code: 'UNAUTHENTICATED', reason: 'key-unknown', message: `key "${authentication.key}" was removed from mesh "${mesh}", revoking the tokens it verified` };
    }
    return this.#options.now() >= authentication.expiresAt ? expiredRefusal(authentication.expiresAt) : undefined;
  }

  async #verify(token: string, key: Stored<SigningKey | ServiceAccountKey>, node: string): Promise<Admission> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, publicKeyOf(key.resource), {
        algorithms: ['RS256'],
        currentDate: new Date(this.#options.now()),
        requiredClaims: ['iss', 'sub', 'exp'],
      }));
    } catch (error) {
      return { ok: false, refusal: verificationRefusal(error) };
    }
    const { resource } = key;
    const subject = String(payload.sub);
    if (resource.type === 'SigningKey' ? payload.iss !== TOKEN_ISSUER : payload.iss !== subject) {
      return refused('UNAUTHENTICATED', 'token-invalid', `the token's issuer "${String(payload.iss)}" is not ${resource.type === 'SigningKey' ? `"${TOKEN_ISSUER}"` : 'its subject'}`);
    }
    if (resource.type === 'ServiceAccountKey') {
      const speaksFor = `${resource.mesh}.${resource.dataplane}`;
      if (subject !== speaksFor) return refused('PERMISSION_DENIED', 'wrong-node', `service account key "${resource.name}" speaks for ${speaksFor}, not ${subject}`);
      if (!this.#audienceAccepted(payload.aud)) {
        return refused('UNAUTHENTICATED', 'token-invalid', `the JWT's audience ${JSON.stringify(payload.aud)} is not this xDS server (https://<${this.#options.audienceHosts().join('|') || 'no TLS name'}>/)`);
      }
    }
    if (subject !== node) return refused('PERMISSION_DENIED', 'wrong-node', `the token is for node ${subject}, but the stream's node is ${node}`);
    const expiresAt = Number(payload.exp) * 1000;
    return { ok: true, authentication: { by: resource.type === 'SigningKey' ? 'token' : 'service-account', key: resource.name, expiresAt } };
  }

  #audienceAccepted(aud: JWTPayload['aud']): boolean {
    const hosts = new Set(this.#options.audienceHosts().map((host) => host.toLowerCase()));
    return [aud ?? []].flat().some((audience) => {
      if (!URL.canParse(audience)) return false;
      const url = new URL(audience);
      return url.protocol === 'https:' && hosts.has(url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase()) && AUDIENCE_PATHS.has(url.pathname);
    });
  }

  #dataplaneAuth(mesh: string): Mesh['dataplaneAuth'] | undefined {
    return (this.#options.store.get({ type: 'Mesh', mesh, name: mesh }) as Stored<Mesh> | undefined)?.resource.dataplaneAuth;
  }

  #key(mesh: string, kid: string): Stored<SigningKey | ServiceAccountKey> | undefined {
    const { store } = this.#options;
    return (store.get({ type: 'SigningKey', mesh, name: kid }) ?? store.get({ type: 'ServiceAccountKey', mesh, name: kid })) as
      | Stored<SigningKey | ServiceAccountKey>
      | undefined;
  }
}

function meshOf(node: string): string | undefined {
  const parsed = parseNodeId(node);
  // A node id that names no Dataplane is never served anything; the session says why.
  return parsed.ok ? parsed.mesh : undefined;
}

function refused(code: Refusal['code'], reason: RefusalReason, message: string): Admission {
  return { ok: false, refusal: { code, reason, message } };
}

function verificationRefusal(error: unknown): Refusal {
  if (error instanceof errors.JWTExpired) {
    const exp = Number(error.payload.exp) * 1000;
    return { code: 'UNAUTHENTICATED', reason: 'token-expired', message: `the token expired at ${new Date(exp).toISOString()}` };
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return { code: 'UNAUTHENTICATED', reason: 'token-invalid', message: 'the token does not verify with its key: it was altered, or signed by another key' };
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    return { code: 'UNAUTHENTICATED', reason: 'token-invalid', message: `the token's "${error.claim}" claim ${error.reason === 'missing' ? 'is missing' : 'is not valid'}` };
  }
  return { code: 'UNAUTHENTICATED', reason: 'token-malformed', message: `the token cannot be read: ${(error as Error).message}` };
}
