/** How a stream's node proved who it is; decided before anything is sent on it. */
export type StreamAuthentication =
  /** Its mesh does not require dataplanes to prove who they are. */
  | { readonly by: 'none' }
  /** A token Chancery signed, or a JWT the node signed with its service account's key. */
  | {
      readonly by: 'token' | 'service-account';
      /** The `kid` that verified it: removing that key ends the stream. */
      readonly key: string;
      /** Epoch ms: the stream is ended then, so the client reconnects with a fresh token. */
      readonly expiresAt: number;
    };

/** Why a stream was refused; the values of `chancery_xds_stream_refusals_total{reason}`. */
export const REFUSAL_REASONS = [
  'token-missing',
  'token-malformed',
  'token-invalid',
  'token-expired',
  'key-unknown',
  'wrong-node',
  'node-changed',
  'auth-required',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** A stream ended before (or instead of) being served: the gRPC status and a short reason. */
export interface Refusal {
  readonly code: 'UNAUTHENTICATED' | 'PERMISSION_DENIED';
  readonly reason: RefusalReason;
  readonly message: string;
}

export type Admission = { readonly ok: true; readonly authentication: StreamAuthentication } | { readonly ok: false; readonly refusal: Refusal };

/**
 * What decides who may speak on the xDS port. The server asks it at a stream's first request,
 * and again for every admitted stream when credentials change; it never sees a key itself.
 */
export interface StreamAdmission {
  /** May `node` be served on a stream whose `authorization` metadata was this? */
  admit(node: string, authorization: string | undefined): Admission | Promise<Admission>;
  /**
   * Is a stream admitted so still admitted under the current credentials: its key not removed,
   * its mesh not newly requiring tokens? Synchronous, so a stream that no longer is can be
   * ended before the change reaches any session.
   */
  recheck(node: string, authentication: StreamAuthentication): Refusal | undefined;
}

/** The refusal of a stream whose token expired while it was open. */
export function expiredRefusal(expiresAt: number): Refusal {
  return { code: 'UNAUTHENTICATED', reason: 'token-expired', message: `the token expired at ${new Date(expiresAt).toISOString()}; reconnect with a fresh one` };
}

/** Every stream is admitted unauthenticated: for embedders and tests that leave identity out. */
export const ADMIT_ALL: StreamAdmission = {
  admit: () => ({ ok: true, authentication: { by: 'none' } }),
  recheck: () => undefined,
};

/** A stream this instance refused, as `/sessions` and the UI show it. */
export interface RefusedStream extends Refusal {
  /** ISO 8601. */
  readonly at: string;
  readonly node: string;
  readonly peer: string;
  readonly protocol: 'sotw' | 'delta';
}
