/**
 * The JSON shape of a session, as `GET /sessions/{node}`, `chancery inspect` and the
 * library's `sessions` observable show it. Built from an actor snapshot by `viewOf`.
 */

import type { TypeStatus } from '../xds/index.js';
import type { SessionState, SessionStateId } from './session-states.js';

export type { SessionState, SessionStateId, TypeStatus };

/** One step of a session's story: the chart states it left and entered, by their ids in the chart. */
export interface TransitionRecord {
  readonly at: string;
  readonly event: string;
  readonly from: SessionStateId;
  readonly to: SessionStateId;
  /** Facts that matter for this step: type URL, version, nonce, resource count, NACK message. */
  readonly detail?: Readonly<Record<string, string | number>>;
}

export interface SessionView {
  readonly node: string;
  readonly state: SessionState;
  /** The step of `state` the session is in, when the state has steps: `catching-up` within `awaiting-snapshot`. */
  readonly step?: SessionStateId;
  readonly instance: string;
  readonly stream?: {
    readonly id: string;
    readonly peer: string;
    readonly openedAt: string;
    readonly protocol: 'sotw' | 'delta';
    /** How the node proved who it is: `none` (its mesh does not ask), `token`, or `service-account`, with the key and expiry. */
    readonly authentication: { readonly by: 'none' } | { readonly by: 'token' | 'service-account'; readonly key: string; readonly expiresAt: string };
  };
  /** Store revision of the snapshot being served. */
  readonly revision?: number;
  /** Why no snapshot could be generated, while that is so (I1: shown, never pushed). */
  readonly error?: { readonly code: string; readonly message: string };
  /** In a mesh with mTLS: the workload certificate last issued to the node (docs/mtls.md). */
  readonly certificate?: {
    readonly spiffeIds: readonly string[];
    readonly serial: string;
    /** The id of the mesh CA that signed it. */
    readonly issuer: string;
    readonly notAfter: string;
    /** When it is renewed: at 2/3 of its life. */
    readonly renewAt: string;
  };
  /** Why the last issue of a certificate failed, until one succeeds (I8: the node keeps what it holds). */
  readonly certificateError?: string;
  /** In a mesh with mTLS: what the node's inbound accepts, and why when it is not what the mesh says (a proxyless gRPC node). */
  readonly inbound?: { readonly accepts: 'plaintext' | 'permissive' | 'strict'; readonly reason?: string };
  /** Keyed by short name: CDS, EDS, LDS, RDS, SDS. */
  readonly types: Readonly<Record<string, TypeStatus>>;
  readonly transitions: readonly TransitionRecord[];
}

/** Whether some type's latest response (the last nonce sent) was NACKed rather than ACKed or unanswered. */
export function lastResponseNacked(types: Readonly<Record<string, TypeStatus>>): boolean {
  for (const type in types) {
    const { sent, nacked } = types[type]!;
    if (sent !== undefined && nacked?.nonce === sent.nonce) return true;
  }
  return false;
}
