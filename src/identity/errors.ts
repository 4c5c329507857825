import { ChanceryError } from '../common/index.js';

/** A token's lifetime is not a positive duration within the limit; nothing was issued. */
export class InvalidTokenLifetimeError extends ChanceryError {
  readonly code = 'CHANCERY_IDENTITY_INVALID_TTL';
  readonly field = 'ttl';
  constructor(readonly ttl: unknown, readonly max: number) {
    super(`ttl must be a duration such as 24h, 90m or 30d, more than 0 and at most ${max / 86_400_000}d; got ${JSON.stringify(ttl)}`);
  }
}

/** A request for a token or key names a field that is missing, unknown or not usable; nothing was issued. */
export class InvalidIdentityRequestError extends ChanceryError {
  readonly code = 'CHANCERY_IDENTITY_INVALID_REQUEST';
  constructor(readonly field: string, reason: string) {
    super(field === '' ? reason : `${field} ${reason}`);
  }
}

/** A mesh CA that cannot be removed now: it signs, or connected dataplanes hold what it signed; nothing was changed. */
export class AuthorityInUseError extends ChanceryError {
  readonly code = 'CHANCERY_IDENTITY_CA_IN_USE';
  readonly field = 'id';
  constructor(readonly mesh: string, readonly id: string, reason: string) {
    super(`CA ${id} of mesh ${mesh} cannot be removed: ${reason}`);
  }
}

/** A certificate was asked for in a mesh whose mTLS is disabled, or which has no CA yet; nothing was signed. */
export class MtlsUnavailableError extends ChanceryError {
  readonly code = 'CHANCERY_IDENTITY_MTLS_UNAVAILABLE';
  readonly field = 'mesh';
  constructor(readonly mesh: string, reason: string) {
    super(`mesh ${mesh} cannot sign a certificate: ${reason}`);
  }
}

/** A dataplane's own credentials (its token or service account) did not admit it; nothing was signed. */
export class DataplaneUnauthenticatedError extends ChanceryError {
  readonly code = 'CHANCERY_IDENTITY_DATAPLANE_UNAUTHENTICATED';
  constructor(readonly node: string, reason: string) {
    super(`${node} is not admitted: ${reason}`);
  }
}
