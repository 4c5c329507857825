import { ChanceryError } from '../common/index.js';
import type { ChangeWarning } from './warnings.js';

/** A write asked to be refused if it had warnings (`failOnWarnings`) had some; nothing was written. */
export class WarningsRefusedError extends ChanceryError {
  readonly code = 'CHANCERY_CHANGES_WARNINGS';
  constructor(readonly warnings: readonly ChangeWarning[]) {
    const more = warnings.length > 1 ? ` (and ${warnings.length - 1} more)` : '';
    super(`refused, as asked (fail on warnings), with nothing written: ${warnings[0]?.message ?? 'no warning'}${more}`);
  }
}

/** A rollout asked from a revision (`since`) that is not before the one it follows. */
export class InvalidSinceError extends ChanceryError {
  readonly code = 'CHANCERY_CHANGES_INVALID_SINCE';
  readonly field = 'since';
  constructor(
    readonly since: number,
    readonly revision: number,
  ) {
    super(`since must be a revision before ${revision}; got ${since}`);
  }
}
