import { ChanceryError } from './common/index.js';
import type { ValidationIssue } from './mesh/index.js';

/** A resource given to `apply` failed validation; nothing was stored. */
export class InvalidResourceInputError extends ChanceryError {
  readonly code = 'CHANCERY_INVALID_RESOURCE';
  constructor(readonly issues: readonly ValidationIssue[]) {
    super(`invalid resource: ${issues.map((issue) => `${issue.path}: ${issue.reason}`).join('; ')}`);
  }

  /** The first offending field, as the HTTP API reports it. */
  get field(): string | undefined {
    return this.issues[0]?.path;
  }
}
