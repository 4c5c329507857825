import type { ResourceType } from '../mesh/index.js';
import { asSeq, FutureRevisionError, RevisionCompactedError, type Author, type ResourceEvent, type ResourceStore, type Seq } from '../store/index.js';
import { writesOf, type WriteSummary } from './recent-writes.js';
import { AT_ONCE, fleetFacts, type FleetSessions, type Run } from './change-desk.js';
import { InvalidSinceError } from './errors.js';
import { ImpactCollector } from './impact.js';
import { rolloutSummary, type RolloutSummary, type SessionProgress } from './rollout.js';

/** Resources a rollout's answer names of its write; `events` counts them all. */
const LISTED_RESOURCES = 100;
/** Rollouts whose affected nodes are kept, most recently asked first: what `--wait` and the UI poll. */
const KEPT = 16;
/** Events `recent` reads back from the log's end. */
const RECENT_WINDOW = 500;
/** Revisions whose completion was measured, to measure each once. */
const MEASURED = 1_024;

/** Which sessions a rollout reads: this instance's (`local`), or every live instance's. */
export type RolloutScope = 'local' | 'fleet';

/** The write a rollout follows: the events after `since` up to its revision. */
export interface RolloutWrite {
  /** When its last event was written, and by whom. */
  readonly at: string;
  readonly by: Author;
  readonly events: number;
  readonly resources: readonly { readonly type: ResourceType; readonly mesh: string; readonly name: string; readonly kind: ResourceEvent['kind'] }[];
}

/** `GET /revisions/{R}`: how a write landed across the nodes it changed. */
export interface RolloutAnswer extends RolloutSummary {
  readonly revision: number;
  /** The revision the write followed: the nodes it changed are those whose configuration differs between the two. */
  readonly since: number;
  readonly scope: RolloutScope;
  readonly write: RolloutWrite;
  /** Nodes whose Dataplane the write deleted: their streams are ended, nothing is sent to them. */
  readonly deleted: readonly string[];
}

export interface RolloutsOptions {
  readonly store: ResourceStore;
  readonly sessions: FleetSessions;
  readonly run?: Run;
  /** Told once per revision, the first time a rollout of it is found complete: seconds from its write to its last ACK. */
  readonly onComplete?: (seconds: number) => void;
}

interface Affected {
  readonly nodes: readonly string[];
  readonly deleted: readonly string[];
  /** The nodes found to have ACKed it so far, with when: not read again (`rolloutSummary`). */
  readonly acked: Map<string, string | undefined>;
}

/**
 * Rollouts of writes (issue 31): which nodes a write changed, worked out once per write with
 * the generator at the revisions before and after it, and where each of them is now, read from
 * what the sessions already record (their served revision, and each type's last sent, ACKed
 * and NACKed response), this instance's and, for the fleet, the others' saved records (read at
 * most once a second, as they are saved). A node found to have ACKed is not read again: while a
 * change converges, each look reads only the nodes still on their way.
 */
export class Rollouts {
  readonly #options: RolloutsOptions;
  readonly #affected = new Map<string, Promise<Affected>>();
  readonly #measured = new Set<number>();

  constructor(options: RolloutsOptions) {
    this.#options = options;
  }

  /**
   * The rollout of `revision` from `since` (default: before the write that made it, its
   * append's first event). Rejects with
   * `FutureRevisionError` for a revision not reached, `RevisionCompactedError` for one whose
   * history was compacted, `InvalidSinceError` for a `since` not below it.
   */
  async status(revision: Seq, options: { readonly since?: Seq; readonly scope: RolloutScope }): Promise<RolloutAnswer> {
    if (options.since !== undefined && options.since >= revision) throw new InvalidSinceError(options.since, revision);
    // A bug in the caller: revision 0 is the empty store, which no write made (the API refuses it).
    if (revision < 1) throw new RangeError(`revision ${revision} was made by no write`);
    const { store } = this.#options;
    // Another instance may have written it: the log's end decides, not this projection's.
    if (revision > store.projection.revision) {
      const now = await store.refresh();
      if (revision > now.revision) throw new FutureRevisionError(revision, now.revision);
    }
    const [last] = await store.readEvents(asSeq(revision - 1), 1);
    // The log has every seq from the checkpoint on: a missing one is a bug.
    if (last === undefined || last.seq !== revision) throw new Error(`the event log has no event at revision ${revision}`);
    // The write that made the revision: from before its append's first event.
    const since = options.since ?? asSeq((last.batch ?? revision) - 1);
    const [affected, write] = await Promise.all([this.#affectedBy(since, revision), this.#write(since, last)]);
    const sessionsOf = await this.#sessionsOf(options.scope);
    const summary = rolloutSummary(revision, affected.nodes, sessionsOf, affected.acked);
    if (summary.ackedAt !== undefined) this.#measure(revision, write.at, summary.ackedAt);
    return { revision, since, scope: options.scope, write, deleted: affected.deleted, ...summary };
  }

  /**
   * The newest writes of the log, newest first: at most `limit`, from its last `window` events
   * (those retained, when fewer are). The first may be cut short by the window.
   */
  async recent(limit: number, window = RECENT_WINDOW): Promise<WriteSummary[]> {
    const { store } = this.#options;
    const head = (await store.refresh()).revision;
    let after = asSeq(Math.max(0, head - window));
    let events: readonly ResourceEvent[];
    try {
      events = await store.readEvents(after, window);
    } catch (error) {
      // Older events were compacted: read from where the retained history starts.
      if (!(error instanceof RevisionCompactedError)) throw error;
      after = error.horizon;
      events = await store.readEvents(after, window);
    }
    const writes = writesOf(events);
    // The oldest may have begun before the window: it would be told short.
    if (writes.length > limit) return writes.slice(0, limit);
    return after > 0 && writes.length > 1 ? writes.slice(0, -1) : writes;
  }

  /** The nodes the write changed, worked out once and kept for the rollouts asked of most recently. */
  #affectedBy(since: Seq, revision: Seq): Promise<Affected> {
    const key = `${since}:${revision}`;
    let affected = this.#affected.get(key);
    if (affected === undefined) {
      affected = this.#work(since, revision);
      // A failed read (a compacted revision, an outage) is not kept.
      affected.catch(() => this.#affected.delete(key));
    } else this.#affected.delete(key);
    this.#affected.set(key, affected);
    for (const old of this.#affected.keys()) {
      if (this.#affected.size <= KEPT) break;
      this.#affected.delete(old);
    }
    return affected;
  }

  async #work(since: Seq, revision: Seq): Promise<Affected> {
    const { store, sessions } = this.#options;
    const [before, after] = await Promise.all([store.projectionAt(since), store.projectionAt(revision)]);
    const collector = new ImpactCollector(before, after, await fleetFacts(sessions));
    await (this.#options.run ?? AT_ONCE)(collector.candidates, (candidate) => collector.add(candidate));
    const impact = collector.impact();
    const nodes: string[] = [];
    const deleted: string[] = [];
    for (const node of impact.nodes) (node.dataplane === 'deleted' ? deleted : nodes).push(node.node);
    return { nodes, deleted, acked: new Map() };
  }

  /** The events after `since` up to `last`, the revision's own event. */
  async #write(since: Seq, last: ResourceEvent): Promise<RolloutWrite> {
    const revision = last.seq;
    const events = await this.#options.store.readEvents(since, Math.min(revision - since, LISTED_RESOURCES));
    const resources = events.filter((event) => event.seq <= revision).map(({ key, kind }) => ({ type: key.type, mesh: key.mesh, name: key.name, kind }));
    return { at: last.at, by: last.by, events: revision - since, resources };
  }

  /** Each node's sessions in `scope`: this instance's, and for the fleet the others' as saved. */
  async #sessionsOf(scope: RolloutScope): Promise<(node: string) => readonly SessionProgress[]> {
    const { sessions } = this.#options;
    const saved = new Map<string, SessionProgress[]>();
    if (scope === 'fleet') {
      for (const session of await sessions.saved()) {
        const list = saved.get(session.node);
        if (list === undefined) saved.set(session.node, [session]);
        else list.push(session);
      }
    }
    return (node) => {
      const local = sessions.local(node);
      const others = saved.get(node) ?? [];
      return local === undefined ? others : [local, ...others];
    };
  }

  #measure(revision: number, writtenAt: string, ackedAt: string): void {
    if (this.#measured.has(revision)) return;
    this.#measured.add(revision);
    if (this.#measured.size > MEASURED) this.#measured.delete(this.#measured.values().next().value!);
    // Another instance's clock may be behind the writer's: a negative time is no time.
    this.#options.onComplete?.(Math.max(0, Date.parse(ackedAt) - Date.parse(writtenAt)) / 1000);
  }
}
