import type { ApplyOutcome } from '../api/index.js';

/** What `chancery apply` counts: each resource's outcome, and those it never sent or that were not written with a refused one. */
export type TalliedOutcome = ApplyOutcome | 'not applied';

const ORDER: readonly TalliedOutcome[] = ['created', 'configured', 'unchanged', 'refused', 'not applied'];

/** Counts outcomes for the line `chancery apply` ends with. */
export class ApplyTally {
  readonly #counts = new Map<TalliedOutcome, number>(ORDER.map((outcome) => [outcome, 0]));

  add(outcome: TalliedOutcome, count = 1): void {
    this.#counts.set(outcome, (this.#counts.get(outcome) ?? 0) + count);
  }

  /** `12 resources: 10 created, 2 configured, 0 unchanged, 0 refused`, and `, N not applied` when some were not. */
  line(): string {
    const total = [...this.#counts.values()].reduce((sum, count) => sum + count, 0);
    const parts = ORDER.filter((outcome) => outcome !== 'not applied' || this.#counts.get(outcome)! > 0).map((outcome) => `${this.#counts.get(outcome)} ${outcome}`);
    return `${total} ${total === 1 ? 'resource' : 'resources'}: ${parts.join(', ')}\n`;
  }
}
