import type { Logger } from 'pino';
import { inboundAcceptance, parseNodeId, sameTlsFacts, tlsFactsOf, type DataplaneTls, type SnapshotTlsFacts, type TlsFacts, type Valid } from '../mesh/index.js';
import { LISTENER, type Ledger } from '../xds/index.js';
import type { Session } from './live-session.js';

export interface TlsStatusWriterOptions {
  /** The node's session on this instance. */
  readonly session: (node: string) => Session | undefined;
  /** The node's status as stored now. */
  readonly stored: (mesh: string, name: string) => TlsFacts | undefined;
  /** Writes statuses as one batch (upserts, one revision); rejects when the store cannot take them. */
  readonly write: (statuses: readonly Valid<DataplaneTls>[]) => Promise<unknown>;
  readonly logger: Logger;
  /** How many sessions this instance holds now: what a round of statuses that changes a client's TLS makes regenerate. */
  readonly sessions: () => number;
}

/** ms a round of statuses gathers for, at least. */
const PACE = 1_000;
/**
 * ms more a round gathers for each session of the instance. A round is a revision of the mesh;
 * one that changes some client's TLS (a migration's step) makes each session regenerate (about
 * 40 µs of CPU a session, its chart step included; a round that changes none is no news to them,
 * GenerationNews): spaced so, rounds cost at most a tenth of the event loop however large the
 * fleet, and every round is a write and a catch-up for each instance sharing the store.
 */
const PACE_PER_SESSION = 0.4;

/**
 * Writes each node's DataplaneTls status (tls-readiness.ts) when the node has ACKed everything
 * it was sent and that differs from what is stored: what the generator's migration rules wait on
 * (I8). The newest per node is written; a failed round is retried at each node's next ACK.
 */
export class TlsStatusWriter {
  readonly #options: TlsStatusWriterOptions;
  readonly #pending = new Map<string, Valid<DataplaneTls>>();
  #writing = false;
  /** The round gathering now: its timer, and how to end the wait at once. */
  #gathering: { readonly timer: NodeJS.Timeout; readonly end: () => void } | undefined;
  #stopped = false;

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

  /** Writes nothing more: what is pending is dropped (each node writes its status again at its next ACK, here or elsewhere). */
  stop(): void {
    this.#stopped = true;
    this.#pending.clear();
    if (this.#gathering === undefined) return;
    clearTimeout(this.#gathering.timer);
    this.#gathering.end();
  }

  #check(node: string): void {
    if (this.#stopped) return;
    const { phase } = this.#options.session(node)?.actor.getSnapshot().context ?? {};
    if (phase?.state !== 'serving') return;
    const facts = tlsFactsOf(phase.snapshot);
    if (facts === undefined || !phase.ledger.acknowledged()) return;
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
   * Writes in rounds, each one batch: what is pending after the round gathered (1 s, longer in a large fleet),
   * and what arrives meanwhile waits for the next. Every write is a revision of the mesh, which
   * every node of the mesh is generated again from when it changes a client's TLS: a fleet's
   * statuses (a new mesh's first ACKs, a rotation's bundle, 10,000 nodes' storm) reach the change
   * feed as one revision a round, not one a node (bench/README.md, sessions in a strict mesh).
   */
  async #flush(): Promise<void> {
    if (this.#writing) return;
    this.#writing = true;
    try {
      while (this.#pending.size > 0) {
        const pace = Math.max(PACE, this.#options.sessions() * PACE_PER_SESSION);
        await new Promise<void>((end) => (this.#gathering = { timer: setTimeout(end, pace), end }));
        this.#gathering = undefined;
        if (this.#stopped) return;
        const round: Valid<DataplaneTls>[] = [];
        for (const [node, status] of this.#pending) {
          this.#pending.delete(node);
          if (!sameTlsFacts(this.#options.stored(status.mesh, status.name), status)) round.push(status);
        }
        if (round.length === 0) continue;
        // A batch is written whole or not at all: one status the store refuses (its Dataplane just
        // deleted) must not hold back the others, whose nodes may not ACK again for a long time.
        await this.#options.write(round).catch(() =>
          Promise.all(
            round.map((status) =>
              this.#options.write([status]).catch((error: unknown) => this.#options.logger.warn({ err: error, node: `${status.mesh}.${status.name}` }, 'writing the node’s mTLS status failed; written at its next ACK')),
            ),
          ),
        );
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
