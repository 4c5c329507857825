import type { Snapshot } from '../xds/index.js';
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
