import type { NodeCertificate } from '../mesh/index.js';
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
  /** The certificate this instance holds for `node` (mesh mTLS), which a preview generates it with. */
  certificate(node: string): NodeCertificate | undefined;
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
 * The fleet's facts from its sessions: the other instances' saved ones, and this instance's,
 * read only for the nodes asked about (`local`; 10,000 sessions are not walked for a write that
 * touches a few). A node seen on several instances (a stream not yet noticed dead) is connected
 * to each that holds a stream; its subscriptions are those of a connected session, else of any.
 */
export function fleetFactsOf(
  saved: Iterable<SessionFacts>,
  local: (node: string) => SessionFacts | undefined = () => undefined,
  certificate: (node: string) => NodeCertificate | undefined = () => undefined,
): FleetFacts {
  const savedByNode = new Map<string, SessionFacts[]>();
  for (const session of saved) {
    const list = savedByNode.get(session.node);
    if (list === undefined) savedByNode.set(session.node, [session]);
    else list.push(session);
  }
  const known = new Map<string, NodeFacts | undefined>();
  return {
    certificate,
    node(node) {
      if (known.has(node)) return known.get(node);
      const own = local(node);
      const facts = factsOf([...(own === undefined ? [] : [own]), ...(savedByNode.get(node) ?? [])]);
      known.set(node, facts);
      return facts;
    },
  };
}

/** One node's facts from its sessions; undefined when it has none. */
function factsOf(sessions: readonly SessionFacts[]): NodeFacts | undefined {
  if (sessions.length === 0) return undefined;
  const connectedTo: string[] = [];
  let subscriptions: Record<string, TypeSubscription> = {};
  let fromConnected = false;
  for (const session of sessions) {
    const connected = CONNECTED.has(session.state);
    if (connected) connectedTo.push(session.instance);
    if (connected || !fromConnected) {
      const from: Record<string, TypeSubscription> = {};
      for (const [type, status] of Object.entries(session.types)) from[type] = status.subscription;
      if (Object.keys(from).length > 0 || connected) subscriptions = from;
      fromConnected ||= connected;
    }
  }
  return { connectedTo: connectedTo.sort(), subscriptions };
}

/** A fleet with no sessions: what a change looks like to nodes not connected anywhere. */
export const NO_FACTS: FleetFacts = { node: () => undefined, certificate: () => undefined };
