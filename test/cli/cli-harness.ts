import { Readable } from 'node:stream';
import { main } from '../../src/cli/index.js';

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `chancery <argv>` in-process with its own environment (never the test runner's). */
export async function runCli(
  argv: readonly string[],
  options: { readonly env?: Record<string, string>; readonly stdin?: string } = {},
): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: options.env ?? {},
    stdin: Readable.from([options.stdin ?? '']),
  });
  return { code, stdout, stderr };
}
