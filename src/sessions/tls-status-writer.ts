import type { Logger } from 'pino';
import { inboundAcceptance, parseNodeId, sameTlsFacts, tlsFactsOf, type DataplaneTls, type SnapshotTlsFacts, type TlsFacts, type Valid } from '../mesh/index.js';
import { LISTENER, type Ledger } from '../xds/index.js';
import type { Session } from './live-session.js';

export interface TlsStatusWriterOptions {
  /** The node's session on this instance. */
  readonly session: (node: string) => Session | undefined;
  /** The node's status as stored now. */
  readonly stored: (mesh: string, name: string) => TlsFacts | undefined;
  /** Writes a status (an upsert); rejects when the store cannot take it. */
  readonly write: (status: Valid<DataplaneTls>) => Promise<unknown>;
  readonly logger: Logger;
}

/**
 * Writes each node's DataplaneTls status (tls-readiness.ts) when the node has ACKed everything
 * it was sent and that differs from what is stored: what the generator's migration rules wait on
 * (I8). Writes go one at a time, the newest per node; a failed one is retried at the node's next ACK.
 */
/** Status writes in flight at once, at most. */
const ROUND = 256;

export class TlsStatusWriter {
  readonly #options: TlsStatusWriterOptions;
  readonly #pending = new Map<string, Valid<DataplaneTls>>();
  #writing = false;

  constructor(options: TlsStatusWriterOptions) {
    this.#options = options;
  }

  /**
   * The node ACKed a response on its current stream. Told before its session hears of the ACK
   * (`SessionCallbacks.onRequest`), so the ledger is read once the session has recorded it.
   */
  acked(node: string): void {
    queueMicrotask(() => this.#check(node));
  }

  #check(node: string): void {
    const { phase } = this.#options.session(node)?.actor.getSnapshot().context ?? {};
    if (phase?.state !== 'serving') return;
    const facts = tlsFactsOf(phase.snapshot);
    if (facts === undefined || !holdsAllSent(phase.ledger)) return;
    const id = parseNodeId(node);
    if (!id.ok) return;
    const stored = this.#options.stored(id.mesh, id.name);
    const held = heldBy(phase.ledger, facts, stored);
    if (sameTlsFacts(stored, held)) return;
    const status: DataplaneTls = { type: 'DataplaneTls', mesh: id.mesh, name: id.name, issuer: held.issuer, trusts: held.trusts, inbound: held.inbound };
    this.#pending.set(node, Object.freeze(status) as Valid<DataplaneTls>);
    void this.#flush();
  }

  /**
   * Writes in rounds: what is pending when a round starts (at most `ROUND` of it) is written at
   * once, and what arrives meanwhile waits for the next. Every status changes its mesh's state,
   * which every node of the mesh is generated again from; written together, a fleet's statuses
   * (a new mesh's first ACKs, a rotation's bundle) reach the change feed as a few revisions, the
   * logs committing concurrent appends together, rather than one revision per node.
   */
  async #flush(): Promise<void> {
    if (this.#writing) return;
    this.#writing = true;
    try {
      while (this.#pending.size > 0) {
        const round: Array<Promise<unknown>> = [];
        for (const [node, status] of this.#pending) {
          this.#pending.delete(node);
          if (sameTlsFacts(this.#options.stored(status.mesh, status.name), status)) continue;
          round.push(this.#options.write(status).catch((error: unknown) => this.#options.logger.warn({ err: error, node }, 'writing the node’s mTLS status failed; written at its next ACK')));
          if (round.length === ROUND) break;
        }
        await Promise.all(round);
      }
    } finally {
      this.#writing = false;
    }
  }
}

/**
 * What the node holds: an Envoy, what its snapshot says; a proxyless gRPC node, the certificate
 * and CAs `chancery agent` wrote (the status the certificate route keeps), and its inbound as
 * `inboundAcceptance` tells.
 */
function heldBy(ledger: Ledger, facts: SnapshotTlsFacts, stored: TlsFacts | undefined): TlsFacts {
  const listeners = ledger.report(LISTENER)?.subscription;
  const { inbound } = inboundAcceptance(facts, listeners);
  if (listeners === undefined || listeners.wildcard) return { issuer: facts.issuer, trusts: facts.trusts, inbound };
  return { issuer: stored?.issuer ?? '', trusts: stored?.trusts ?? [], inbound };
}

/** Whether the stream ACKed the last response of every type it asked for: the node holds what it was sent. */
function holdsAllSent(ledger: Ledger): boolean {
  for (const typeUrl of ledger.requestedTypes()) {
    const report = ledger.report(typeUrl);
    if (report?.sent !== undefined && report.acked?.nonce !== report.sent.nonce) return false;
  }
  return true;
}
