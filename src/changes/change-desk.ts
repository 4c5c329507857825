import type { NodeCertificate } from '../mesh/index.js';
import { RevisionMovedError, type ResourceStore, type Seq, type Write, type Written } from '../store/index.js';
import { WarningsRefusedError } from './errors.js';
import { ImpactCollector } from './impact.js';
import { fleetFactsOf, type FleetFacts } from './node-facts.js';
import type { SessionProgress } from './rollout.js';
import { previewAnswer, type NodePage, type PreviewAnswer } from './preview.js';
import { resourceChanges, revertWrites, type ResourceChange } from './revision-diff.js';
import { warningsOf, type ChangeWarning } from './warnings.js';

/** Times a write refused on warnings is checked again when another write landed between its check and its append. */
const CHECKS = 3;

/** The fleet's sessions, as previews, warnings and rollouts read them. */
export interface FleetSessions {
  /** This instance's session of `node`, if it has one. */
  local(node: string): SessionProgress | undefined;
  /** The other live instances' sessions, as they last saved them. */
  saved(): Promise<readonly SessionProgress[]>;
  /** The certificate this instance holds for `node` in a mesh with mTLS; none for a node it does not serve. */
  certificate?(node: string): NodeCertificate | undefined;
}

/**
 * Runs `work` over `items`, resolving once done. The control plane spreads it over turns of the
 * event loop behind the sessions' own work (the scheduler's background lane).
 */
export type Run = <T>(items: readonly T[], work: (item: T) => void) => Promise<void>;

/** Runs the work at once. */
export const AT_ONCE: Run = async (items, work) => {
  for (const item of items) work(item);
};

export interface ChangeDeskOptions {
  readonly store: ResourceStore;
  readonly sessions: FleetSessions;
  /** Default `AT_ONCE`. */
  readonly run?: Run;
}

/** The fleet's facts now: the others' sessions as saved, and this instance's as asked about. */
export async function fleetFacts(sessions: FleetSessions): Promise<FleetFacts> {
  return fleetFactsOf(await sessions.saved(), (node) => sessions.local(node), (node) => sessions.certificate?.(node));
}

/** How a write is made. */
export interface DeskWriteOptions {
  readonly caller?: string;
  /** Refuse the write (`WarningsRefusedError`, nothing stored) if it has warnings. */
  readonly failOnWarnings?: boolean;
}

/** What a write did, and the consequences it was warned of. */
export interface DeskWritten {
  readonly written: Written;
  readonly warnings: readonly ChangeWarning[];
}

/**
 * Where writes are previewed, checked and made (issue 31): a dry run plans the write on the
 * store without appending it and computes its impact and warnings from the two projections;
 * a real write is planned first for its warnings, then appended.
 */
export class ChangeDesk {
  readonly #options: ChangeDeskOptions;

  constructor(options: ChangeDeskOptions) {
    this.#options = options;
  }

  /** What `writes` would do, appending nothing; rejects as the write would (validation aside, which is the caller's). */
  async preview(writes: readonly Write[], options: { readonly caller?: string; readonly page: NodePage }): Promise<PreviewAnswer> {
    const plan = await this.#options.store.plan(writes, { caller: options.caller });
    const facts = await fleetFacts(this.#options.sessions);
    const collector = new ImpactCollector(plan.before, plan.after, facts);
    await (this.#options.run ?? AT_ONCE)(collector.candidates, (candidate) => collector.add(candidate));
    return previewAnswer(plan, collector.impact(), warningsOf({ before: plan.before, after: plan.after, facts }), options.page);
  }

  /**
   * Makes the writes, with the warnings of what they did. With `failOnWarnings`, the write is
   * appended only onto the revision its warnings were checked at (`atRevision`), so what was
   * checked is what lands; when another write landed first, it is checked again.
   */
  async write(writes: readonly Write[], options: DeskWriteOptions = {}): Promise<DeskWritten> {
    const { store } = this.#options;
    const { caller, failOnWarnings = false } = options;
    for (let check = 1; ; check++) {
      const plan = await store.plan(writes, { caller });
      const warnings = warningsOf({ before: plan.before, after: plan.after, facts: await fleetFacts(this.#options.sessions) });
      if (failOnWarnings && warnings.length > 0) throw new WarningsRefusedError(warnings);
      let written: Written;
      try {
        written = await store.write(writes, { caller, ...(failOnWarnings && { atRevision: plan.before.revision }) });
      } catch (error) {
        if (error instanceof RevisionMovedError && check < CHECKS) continue;
        throw error;
      }
      // Another write landed between the plan and the append: warn of what this one really did.
      if (written.events.length > 0 && written.from !== plan.before.revision) return { written, warnings: await this.#warningsOf(written) };
      return { written, warnings };
    }
  }

  /**
   * The writes that put the store back as it was at `revision` (in `mesh` alone when given),
   * from the log's end: only what differs. Rejects with `RevisionCompactedError` for a revision
   * whose history was compacted, and `FutureRevisionError` for one not reached.
   */
  async revertTo(revision: Seq, mesh?: string): Promise<Write[]> {
    const { store } = this.#options;
    const now = await store.refresh();
    return revertWrites(await store.projectionAt(revision), now, mesh);
  }

  /** The configuration resources that differ between two revisions (in `mesh` alone when given). */
  async diff(from: Seq, to: Seq, mesh?: string): Promise<ResourceChange[]> {
    const { store } = this.#options;
    const [before, after] = await Promise.all([store.projectionAt(from), store.projectionAt(to)]);
    return resourceChanges(before, after, mesh);
  }

  async #warningsOf(written: Written): Promise<ChangeWarning[]> {
    const { store } = this.#options;
    const [before, after] = await Promise.all([store.projectionAt(written.from), store.projectionAt(written.revision)]);
    return warningsOf({ before, after, facts: await fleetFacts(this.#options.sessions) });
  }
}
