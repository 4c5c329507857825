/**
 * The JSON shape of a session, as `GET /sessions/{node}`, `chancery inspect` and the
 * library's `sessions` observable show it. Built from an actor snapshot by `viewOf`.
 */

import type { TypeStatus } from '../xds/stream-ledger.js';

export type { TypeStatus };

export type SessionState = 'connecting' | 'awaiting-snapshot' | 'serving' | 'disconnected' | 'evicted';

export interface TransitionRecord {
  readonly at: string;
  readonly event: string;
  readonly from: SessionState;
  readonly to: SessionState;
  /** Facts that matter for this step: type URL, version, nonce, resource count, NACK message. */
  readonly detail?: Readonly<Record<string, string | number>>;
}

export interface SessionView {
  readonly node: string;
  readonly state: SessionState;
  readonly instance: string;
  readonly stream?: { readonly id: string; readonly peer: string; readonly openedAt: string };
  /** Store revision of the snapshot being served. */
  readonly revision?: number;
  /** Why no snapshot could be generated, while that is so (I1: shown, never pushed). */
  readonly error?: { readonly code: string; readonly message: string };
  /** Keyed by short name: CDS, EDS, LDS, RDS. */
  readonly types: Readonly<Record<string, TypeStatus>>;
  readonly transitions: readonly TransitionRecord[];
}
