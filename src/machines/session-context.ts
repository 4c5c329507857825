import type { Snapshot, Ledger, TypeStatus } from '../xds/index.js';
import type { CertificateInfo, GenerationFailure, StreamInfo } from './session-events.js';

/**
 * What a session holds, by state of the chart (`awaiting-snapshot` for each of its steps).
 * Only `serving` holds a Snapshot: in `connecting` and `awaiting-snapshot` there is nothing
 * that could be pushed (I1), and `disconnected` keeps only a record of what the last stream
 * was sent, for inspection, never the resources. The ledger is a value the chart assigns.
 */
export type Phase =
  | { readonly state: 'connecting' }
  | { readonly state: 'awaiting-snapshot'; readonly stream: StreamInfo; readonly ledger: Ledger }
  | { readonly state: 'serving'; readonly stream: StreamInfo; readonly ledger: Ledger; readonly snapshot: Snapshot }
  | {
      readonly state: 'disconnected';
      readonly since: number;
      readonly lastStream: StreamInfo;
      readonly types: Readonly<Record<string, TypeStatus>>;
    }
  | { readonly state: 'evicted' };

export type StreamPhase = Extract<Phase, { stream: StreamInfo }>;

export interface SessionInput {
  /** The node id from the first request; validated by the machine, not before. */
  readonly node: string;
  /** How long a disconnected session waits for its node to come back, in ms. */
  readonly evictionGrace: number;
  /** A certificate issued ahead for the node (pregeneration), handed to its session as it is created: its first generation has it. */
  readonly certificate?: CertificateInfo;
}

export interface SessionContext {
  readonly node: string;
  readonly evictionGrace: number;
  readonly phase: Phase;
  /** Store revision of the last generation, successful or not; a tick at or below it is not news. */
  readonly attempted: number;
  /** Why the last generation failed, while the failure stands (I1: shown, never pushed). */
  readonly error?: GenerationFailure;
  /** The workload certificate last issued to the node, in a mesh with mTLS. */
  readonly certificate?: CertificateInfo;
  /** Why the last issue of a certificate failed, until one succeeds (I8: the node keeps what it holds). */
  readonly certificateError?: string;
}

/**
 * Whether the store at `revision` is news to the session: its last generation, successful or
 * not, was at an earlier revision. The chart's `behind` guard; the registry asks it too, before
 * a tick, so an idle fleet costs no events (one decision, two callers).
 */
export function isBehind(context: SessionContext, revision: number): boolean {
  return revision > context.attempted;
}

/** The stream-holding phase; calling it elsewhere is a bug in the chart. */
export function streamPhase(context: SessionContext): StreamPhase {
  const { phase } = context;
  if (phase.state !== 'awaiting-snapshot' && phase.state !== 'serving') {
    throw new Error(`session ${context.node} has no stream in state ${phase.state}`);
  }
  return phase;
}

/** The snapshot `serving` holds; calling it elsewhere is a bug in the chart. */
export function servedSnapshot(context: SessionContext): Snapshot {
  const { phase } = context;
  if (phase.state !== 'serving') throw new Error(`session ${context.node} serves no snapshot in state ${phase.state}`);
  return phase.snapshot;
}

