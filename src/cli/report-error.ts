import { ChanceryError } from '../common/index.js';
import type { TextSink } from './cli-io.js';
import { ApiRejectedError, ApiUnreachableError, UsageError } from './errors.js';

/** Exit codes: 0 ok; 1 refused, not found, unreachable or failed; 2 a usage error. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/**
 * Prints an error the way a user can act on it and returns the exit code: usage errors
 * point at the `--help` of `command`; server refusals show the server's code, field and reason; anything
 * that is not a Chancery error is a bug, printed with its stack.
 */
export function reportError(error: unknown, stderr: TextSink, command?: string): number {
  if (error instanceof UsageError) {
    const invoked = command === undefined ? 'chancery' : `chancery ${command}`;
    stderr.write(`${invoked}: ${error.message}\nSee '${invoked} --help'.\n`);
    return EXIT.usage;
  }
  if (error instanceof ApiRejectedError) {
    const { code, field, reason, issues = [] } = error.rejection;
    const lines = [`${code} (HTTP ${error.status}): ${reason}`];
    if (field !== undefined && field !== '') lines.push(`  field: ${field}`);
    for (const issue of issues.slice(1)) lines.push(`  also:  ${issue.path === '' ? '' : `${issue.path}: `}${issue.reason}`);
    stderr.write(`${lines.join('\n')}\n`);
    return EXIT.failed;
  }
  if (error instanceof ApiUnreachableError) {
    stderr.write(`${error.message}\n`);
    return EXIT.failed;
  }
  if (error instanceof ChanceryError) {
    stderr.write(`${error.code}: ${error.message}\n`);
    return EXIT.failed;
  }
  stderr.write(`unexpected error (a bug in chancery): ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  return EXIT.failed;
}
