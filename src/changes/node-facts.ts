import type { TypeStatus } from '../machines/index.js';

/** What a node's stream subscribed to of one type. */
export interface TypeSubscription {
  readonly wildcard: boolean;
  readonly names: readonly string[];
}

/** What the fleet knows of a node: which instances hold a stream of it, and what it subscribed to. */
export interface NodeFacts {
  /** Instances whose session of the node holds a stream now (awaiting its snapshot, or served), sorted. */
  readonly connectedTo: readonly string[];
  /** Per short type name (CDS, EDS, LDS, RDS), what its stream (the latest one seen) subscribed to. */
  readonly subscriptions: Readonly<Record<string, TypeSubscription>>;
}

/** What previews and warnings read of the fleet's sessions, by node id. */
export interface FleetFacts {
  node(node: string): NodeFacts | undefined;
  /** Every node with a session anywhere. */
  nodes(): Iterable<readonly [string, NodeFacts]>;
}

/** A session as any instance shows it: its own live view, or another instance's saved record. */
export interface SessionFacts {
  readonly node: string;
  readonly state: string;
  readonly instance: string;
  readonly types: Readonly<Record<string, Pick<TypeStatus, 'subscription'>>>;
}

/** The states in which a session holds its node's stream. */
const CONNECTED: ReadonlySet<string> = new Set(['awaiting-snapshot', 'serving']);

/**
 * The fleet's facts from its sessions: every instance's, so a node served elsewhere counts too.
 * A node seen on several instances (a stream not yet noticed dead) is connected to each that
 * holds a stream; its subscriptions are those of a connected session, else of any.
 */
export function fleetFactsOf(sessions: Iterable<SessionFacts>): FleetFacts {
  const byNode = new Map<string, { connectedTo: string[]; subscriptions: Record<string, TypeSubscription>; fromConnected: boolean }>();
  for (const session of sessions) {
    const connected = CONNECTED.has(session.state);
    let facts = byNode.get(session.node);
    if (facts === undefined) {
      facts = { connectedTo: [], subscriptions: {}, fromConnected: false };
      byNode.set(session.node, facts);
    }
    if (connected) facts.connectedTo.push(session.instance);
    if (connected || !facts.fromConnected) {
      const subscriptions: Record<string, TypeSubscription> = {};
      for (const [type, status] of Object.entries(session.types)) subscriptions[type] = status.subscription;
      if (Object.keys(subscriptions).length > 0 || connected) facts.subscriptions = subscriptions;
      facts.fromConnected ||= connected;
    }
  }
  const facts = new Map<string, NodeFacts>();
  for (const [node, { connectedTo, subscriptions }] of byNode) facts.set(node, { connectedTo: connectedTo.sort(), subscriptions });
  return { node: (node) => facts.get(node), nodes: () => facts.entries() };
}

/** A fleet with no sessions: what a change looks like to nodes not connected anywhere. */
export const NO_FACTS: FleetFacts = { node: () => undefined, nodes: () => [] };
