import type { TypeStatus } from '../machines/index.js';
import type { SessionFacts } from './node-facts.js';

/** A session as a rollout reads it: its state, the revision it serves, and each type's last sent, ACKed and NACKed response. */
export interface SessionProgress extends SessionFacts {
  /** The store revision of the snapshot it serves; absent unless serving. */
  readonly revision?: number;
  readonly types: Readonly<Record<string, Pick<TypeStatus, 'subscription' | 'sent' | 'acked' | 'nacked'>>>;
}

/** Why a node has not ACKed a revision yet. */
export type PendingReason =
  /** Its session lost its stream and waits for it to come back (eviction grace). */
  | 'disconnected'
  /** Its stream waits for its first snapshot. */
  | 'awaiting-snapshot'
  /** It serves an older revision: the change has not reached its session yet. */
  | 'behind'
  /** Sent, not answered yet. */
  | 'unacked';

/** Where one node is with a revision. */
export type NodeRollout =
  | { readonly node: string; readonly status: 'acked'; readonly instance: string; /** Its last ACK, ISO 8601. */ readonly at?: string }
  | { readonly node: string; readonly status: 'nacked'; readonly instance: string; readonly type: string; readonly message: string }
  | { readonly node: string; readonly status: 'pending'; readonly reason: PendingReason; readonly instance: string }
  /** No session anywhere: it is sent the revision whenever it connects (I2). */
  | { readonly node: string; readonly status: 'not-connected' };

/**
 * Where `node` is with `revision`, from its sessions (one per instance that has one). It has
 * ACKed once a session serves `revision` or later and every type's last response was ACKed; it
 * NACKed when such a session's last response of a type was NACKed. A session that ACKed on any
 * instance is enough: the node moved there.
 */
export function nodeRollout(node: string, revision: number, sessions: readonly SessionProgress[]): NodeRollout {
  if (sessions.length === 0) return { node, status: 'not-connected' };
  let nacked: NodeRollout | undefined;
  let pending: NodeRollout | undefined;
  for (const session of sessions) {
    const { instance } = session;
    if (session.state !== 'serving' || (session.revision ?? 0) < revision) {
      const reason: PendingReason = session.state === 'disconnected' ? 'disconnected' : session.state === 'awaiting-snapshot' ? 'awaiting-snapshot' : 'behind';
      pending ??= { node, status: 'pending', reason, instance };
      continue;
    }
    let unacked = false;
    let lastAck: string | undefined;
    for (const [type, status] of Object.entries(session.types)) {
      const { sent, acked, nacked: refused } = status;
      if (sent === undefined) continue;
      if (refused !== undefined && refused.nonce === sent.nonce) nacked ??= { node, status: 'nacked', instance, type, message: refused.message };
      if (acked?.nonce !== sent.nonce) unacked = true;
      else if (lastAck === undefined || acked.at > lastAck) lastAck = acked.at;
    }
    if (!unacked) return { node, status: 'acked', instance, ...(lastAck !== undefined && { at: lastAck }) };
    pending ??= { node, status: 'pending', reason: 'unacked', instance };
  }
  return nacked ?? pending!;
}

/** Nodes a rollout lists at most per NACK message and among the pending; the counts count them all. */
const LISTED = 20;

/** How a revision landed across the nodes it changed. */
export interface RolloutCounts {
  /** Nodes whose configuration the write changed (its deleted Dataplanes apart). */
  readonly affected: number;
  readonly acked: number;
  readonly nacked: number;
  readonly pending: number;
  /** No session anywhere: each is sent the revision when it connects. */
  readonly notConnected: number;
}

export interface RolloutSummary {
  /** Every affected node with a session has ACKed the revision (or a later one): nothing pending, nothing NACKed. */
  readonly complete: boolean;
  readonly nodes: RolloutCounts;
  /** NACKs grouped by message, each with how many nodes sent it and the first of them. */
  readonly nacks: readonly { readonly type: string; readonly message: string; readonly count: number; readonly nodes: readonly string[] }[];
  /** The first nodes still pending, with why and where. */
  readonly pending: readonly { readonly node: string; readonly reason: PendingReason; readonly instance: string }[];
  /** When the last affected node ACKed (ISO 8601), once complete. */
  readonly ackedAt?: string;
}

/**
 * The rollout of `revision` over the nodes it changed, from each node's sessions. `acked` holds
 * the nodes known to have ACKed it (with when): a node that ACKed a revision did so for good, so
 * they are counted without reading their sessions again, and each node found ACKed is added.
 * A rollout asked for again and again while a change converges reads fewer sessions each time.
 */
export function rolloutSummary(
  revision: number,
  affected: readonly string[],
  sessionsOf: (node: string) => readonly SessionProgress[],
  acked: Map<string, string | undefined> = new Map(),
): RolloutSummary {
  let ackedCount = 0;
  let nacked = 0;
  let notConnected = 0;
  let ackedAt: string | undefined;
  const nacks = new Map<string, { type: string; message: string; count: number; nodes: string[] }>();
  const pending: { node: string; reason: PendingReason; instance: string }[] = [];
  let pendingCount = 0;
  for (const node of affected) {
    const rollout: NodeRollout = acked.has(node) ? { node, status: 'acked', instance: '', at: acked.get(node) } : nodeRollout(node, revision, sessionsOf(node));
    switch (rollout.status) {
      case 'acked':
        ackedCount++;
        acked.set(node, rollout.at);
        if (rollout.at !== undefined && (ackedAt === undefined || rollout.at > ackedAt)) ackedAt = rollout.at;
        break;
      case 'nacked': {
        nacked++;
        const key = `${rollout.type}\0${rollout.message}`;
        const group = nacks.get(key) ?? { type: rollout.type, message: rollout.message, count: 0, nodes: [] };
        group.count++;
        if (group.nodes.length < LISTED) group.nodes.push(node);
        nacks.set(key, group);
        break;
      }
      case 'pending':
        pendingCount++;
        if (pending.length < LISTED) pending.push({ node, reason: rollout.reason, instance: rollout.instance });
        break;
      case 'not-connected':
        notConnected++;
    }
  }
  const complete = nacked === 0 && pendingCount === 0;
  return {
    complete,
    nodes: { affected: affected.length, acked: ackedCount, nacked, pending: pendingCount, notConnected },
    nacks: [...nacks.values()].sort((a, b) => b.count - a.count),
    pending,
    ...(complete && ackedAt !== undefined && { ackedAt }),
  };
}
