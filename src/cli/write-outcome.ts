import { WRITE_HEADERS } from '../api/index.js';
import type { ApiAnswer } from './api-client.js';
import type { TextSink } from './cli-io.js';

/**
 * What a PUT did, as `apply` prints it: `created`, `configured` or `unchanged` (DESIGN §7). A
 * server that does not say (one older than the header) is read from the status, as before.
 */
export function outcomeOf(answer: ApiAnswer): string {
  return answer.headers[WRITE_HEADERS.outcome] ?? (answer.status === 201 ? 'created' : 'configured');
}

/** A write's warnings, one line each, on stderr: the write was made (or previewed) regardless. */
export function printWarnings(warnings: readonly string[], stderr: TextSink): void {
  for (const warning of warnings) stderr.write(`Warning: ${warning}\n`);
}
