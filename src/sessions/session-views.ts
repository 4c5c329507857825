import { lastResponseNacked, sessionStateOf, viewOf, type SessionState, type SessionView, type TypeStatus } from '../machines/index.js';
import { decodeAny, PROTOCOLS, SHORT_NAME, type Protocol } from '../xds/index.js';
import type { Session } from './live-session.js';
import type { SessionRegistry } from './session-registry.js';

/** What listing and counting sessions needs of each, without its view. */
export interface SessionSummary {
  readonly node: string;
  readonly state: SessionState;
  readonly instance: string;
}

/**
 * What a session holds now, without its story: its state, the revision of the snapshot it
 * serves, and each type's subscription and sent / ACKed / NACKed response. What previews and
 * rollouts read of 10,000 sessions; a saved record (`SessionView` less transitions) has the same fields.
 */
export interface SessionBrief {
  readonly node: string;
  readonly state: SessionState;
  readonly instance: string;
  readonly revision?: number;
  readonly types: Readonly<Record<string, TypeStatus>>;
}

/** A page of sessions with the counts of all of them, as `GET /sessions` answers it. */
export interface SessionPage {
  readonly items: readonly SessionView[];
  readonly total: number;
  readonly counts: { readonly byState: Record<string, number>; readonly byInstance: Record<string, number> };
}

/**
 * What a node's current stream was last sent, per short type name, resources decoded to proto3
 * JSON: SotW, the last response; Delta, everything the node holds, with each resource's version.
 */
export type LastSent = Record<string, { version: string; nonce: string; resources: unknown[]; versions?: Record<string, string> }>;

/**
 * This instance's sessions as the API, the metrics and the fleet records read them: views
 * built on demand from each actor's snapshot and story, and the cheap facts (state, NACKing)
 * read without building a view, so a page of 100 out of 10,000 costs 100 views.
 */
export class SessionViews {
  constructor(
    readonly registry: SessionRegistry,
    readonly instanceId: string,
  ) {}

  list(): SessionView[] {
    return [...this.registry.sessions()].map((session) => this.#view(session));
  }

  get(node: string): SessionView | undefined {
    const session = this.registry.session(node);
    return session && this.#view(session);
  }

  /** Every session's node, state and instance: a page of 10,000 sessions is chosen from these. */
  summaries(): SessionSummary[] {
    const out: SessionSummary[] = [];
    for (const session of this.registry.sessions()) out.push({ node: session.node, state: sessionStateOf(session.at), instance: this.instanceId });
    return out;
  }

  /** Sessions per state, every state included: what `/metrics` reports, without building views. */
  counts(): Record<SessionState, number> {
    return this.registry.counts();
  }

  /**
   * Every session in node order from `offset`, at most `limit` of them, as views, with how many
   * there are in all and per state: an unfiltered page of 10,000 sessions costs its own views.
   */
  inOrder(offset: number, limit: number | undefined): SessionPage {
    const total = this.registry.size;
    const items = this.registry.inOrder(offset, limit === undefined ? total : offset + limit).map((session) => this.#view(session));
    return { items, total, counts: { byState: this.counts(), byInstance: total === 0 ? {} : { [this.instanceId]: total } } };
  }

  /**
   * Epoch ms at which the longest-waiting parked request arrived: a session in
   * `awaiting-snapshot` has waited since its stream's first request. Undefined when none waits.
   */
  oldestParkedSince(): number | undefined {
    let oldest: number | undefined;
    for (const session of this.registry.sessions()) {
      const { phase } = session.actor.getSnapshot().context;
      if (phase.state === 'awaiting-snapshot' && (oldest === undefined || phase.stream.openedAt < oldest)) oldest = phase.stream.openedAt;
    }
    return oldest;
  }

  /** Sessions holding a stream, by the protocol it speaks. */
  streams(): Record<Protocol, number> {
    const streams = Object.fromEntries(PROTOCOLS.map((protocol) => [protocol, 0])) as Record<Protocol, number>;
    for (const session of this.registry.sessions()) {
      const { phase } = session.actor.getSnapshot().context;
      if ('stream' in phase) streams[phase.stream.protocol]++;
    }
    return streams;
  }

  /** The node's session's brief, if it has one here. */
  brief(node: string): SessionBrief | undefined {
    const session = this.registry.session(node);
    return session && this.#brief(session);
  }

  /** Whether the node's last response of some type was NACKed (its latest nonce sent was refused). */
  nacking(node: string): boolean {
    const phase = this.registry.session(node)?.actor.getSnapshot().context.phase;
    if (phase === undefined) return false;
    if ('ledger' in phase) return phase.ledger.nacking();
    return phase.state === 'disconnected' && lastResponseNacked(phase.types);
  }

  /** What the node's current stream was last sent, per type, decoded for reading. */
  lastSent(node: string): LastSent | undefined {
    const session = this.registry.session(node);
    if (!session) return undefined;
    const { phase } = session.actor.getSnapshot().context;
    const out: LastSent = {};
    if (!('ledger' in phase)) return out;
    for (const typeUrl of phase.ledger.requestedTypes()) {
      const report = phase.ledger.report(typeUrl);
      const sent = report?.sent;
      if (sent === undefined) continue;
      out[SHORT_NAME[typeUrl]] = {
        version: sent.version,
        nonce: sent.nonce,
        resources: sent.resources.map((resource) => decodeAny(resource.any)),
        ...(report!.perResourceVersions && { versions: Object.fromEntries(sent.resources.map((resource) => [resource.name, resource.version])) }),
      };
    }
    return out;
  }

  #brief(session: Session): SessionBrief {
    const { phase } = session.actor.getSnapshot().context;
    const types = 'ledger' in phase ? phase.ledger.status() : phase.state === 'disconnected' ? phase.types : {};
    const revision = phase.state === 'serving' ? phase.snapshot.revision : undefined;
    return { node: session.node, state: sessionStateOf(session.at), instance: this.instanceId, ...(revision !== undefined && { revision }), types };
  }

  #view(session: Session): SessionView {
    return viewOf(session.actor.getSnapshot(), this.instanceId, session.story.toArray());
  }
}
