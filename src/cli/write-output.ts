import { writeFile } from 'node:fs/promises';
import type { CliIo } from './cli-io.js';
import { UsageError } from './errors.js';

/** Writes a command's document to `--output FILE`, or to stdout when none is given. */
export async function writeOutput(io: CliIo, text: string, output: string | undefined): Promise<void> {
  if (output === undefined) {
    io.stdout.write(text);
    return;
  }
  try {
    await writeFile(output, text);
  } catch (error) {
    throw new UsageError(`--output ${output} cannot be written: ${(error as Error).message}`, { cause: error });
  }
}
