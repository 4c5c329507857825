import { writeFile } from 'node:fs/promises';
import type { CliIo } from './cli-io.js';
import { UsageError } from './errors.js';

/**
 * Writes a command's document to `--output FILE`, or to stdout when none is given. A `secret`
 * (a token, a key) is written readable by its owner only.
 */
export async function writeOutput(io: CliIo, text: string, output: string | undefined, options: { readonly secret?: boolean } = {}): Promise<void> {
  if (output === undefined) {
    io.stdout.write(text);
    return;
  }
  try {
    await writeFile(output, text, options.secret ? { mode: 0o600 } : {});
  } catch (error) {
    throw new UsageError(`--output ${output} cannot be written: ${(error as Error).message}`, { cause: error });
  }
}
