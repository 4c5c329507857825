import type { Snapshot } from '../xds/index.js';
import { SERVER_LISTENER_PREFIX } from './names.js';
import type { DataplaneTls } from './resources.js';

/**
 * What a node holds of mTLS once it has ACKed a snapshot: the CA of its certificate, the CAs it
 * trusts, what its inbound accepts. The instance serving the node writes it as the node's
 * DataplaneTls status when it changes; the generator reads those statuses (tls-contexts.ts), so
 * migrations wait on what nodes hold, and every instance decides alike from the same revision
 * (I6, I8). It lives in the store rather than in an instance's memory because a node's clients
 * may be served by other instances.
 */
export type TlsFacts = Pick<DataplaneTls, 'issuer' | 'trusts' | 'inbound'>;

/**
 * What a snapshot says of mTLS: for an Envoy, the facts themselves; for an xDS-enabled gRPC
 * server, what its server Listener accepts (never permissive, A36). Which client the node is,
 * only its subscriptions tell (the instance serving it decides: tls-status-writer.ts).
 */
export interface SnapshotTlsFacts extends TlsFacts {
  readonly grpcServerInbound: DataplaneTls['inbound'];
  /** Whether the dataplane has an inbound at all: what it accepts is shown only then. */
  readonly serves: boolean;
}

const facts = new WeakMap<Snapshot, SnapshotTlsFacts>();

/** Called by the generator for each snapshot of a node whose mesh has (or had) mTLS. */
export function recordTlsFacts(snapshot: Snapshot, held: SnapshotTlsFacts): void {
  facts.set(snapshot, held);
}

/** What a node serving `snapshot` holds of mTLS; undefined for a mesh that never had it. */
export function tlsFactsOf(snapshot: Snapshot): SnapshotTlsFacts | undefined {
  return facts.get(snapshot);
}

/** Whether a stored status says what `held` says. */
export function sameTlsFacts(status: TlsFacts | undefined, held: TlsFacts): boolean {
  return (
    status !== undefined &&
    status.issuer === held.issuer &&
    status.inbound === held.inbound &&
    status.trusts.length === held.trusts.length &&
    status.trusts.every((id, i) => id === held.trusts[i])
  );
}

/** What a node's inbound accepts of mTLS, as its instance shows it, and why when it is not what the mesh says. */
export interface InboundAcceptance {
  readonly inbound: DataplaneTls['inbound'];
  /** Set for a proxyless gRPC node, whose inbound is never permissive. */
  readonly reason?: string;
}

const GRPC_SERVER = 'an xDS-enabled gRPC server cannot tell TLS from plaintext on one port (gRFC A36): plaintext until the mesh is strict, then mTLS only';
const GRPC_PLAIN = 'a proxyless gRPC node that asked for no server Listener serves its inbound itself, in plaintext';

/**
 * What the inbound of a node serving `facts` accepts, by the client it is: an Envoy subscribes to
 * all listeners and accepts what its snapshot says; a proxyless gRPC node names its listeners, and
 * accepts what its server Listener does if it asked for one (an xDS-enabled server), else plaintext.
 */
export function inboundAcceptance(facts: SnapshotTlsFacts, listeners: { readonly wildcard: boolean; readonly names: ReadonlySet<string> } | undefined): InboundAcceptance {
  if (listeners === undefined || listeners.wildcard) return { inbound: facts.inbound };
  for (const name of listeners.names) if (name.startsWith(SERVER_LISTENER_PREFIX)) return { inbound: facts.grpcServerInbound, reason: GRPC_SERVER };
  return { inbound: 'plaintext', reason: GRPC_PLAIN };
}
