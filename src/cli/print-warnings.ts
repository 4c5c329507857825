import type { TextSink } from './cli-io.js';

/** A write's warnings, one line each, on stderr: the write was made (or previewed) regardless. */
export function printWarnings(warnings: readonly string[], stderr: TextSink): void {
  for (const warning of warnings) stderr.write(`Warning: ${warning}\n`);
}
