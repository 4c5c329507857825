import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { CliIo } from './cli-io.js';
import { UsageError } from './errors.js';

/** A `chancery` subcommand. `main` handles `--help` with `help`; `run` gets the rest of argv. */
export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly help: string;
  /** Resolves with the exit code; throws `UsageError` (exit 2) or a Chancery error (exit 1). */
  run(argv: readonly string[], io: CliIo): Promise<number>;
}

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

type StrictConfig<TOptions extends OptionsConfig> = { args: string[]; options: TOptions; allowPositionals: true; strict: true };
export type CommandLine<TOptions extends OptionsConfig> = ReturnType<typeof parseArgs<StrictConfig<TOptions>>>;

/**
 * `parseArgs`, strict, with its errors (unknown flag, missing value) as `UsageError`s. A flag that
 * takes one value and is given twice is refused too: parseArgs would keep the last one without
 * a word (`--mesh a --mesh b`), as a JSON body keeps the last of a key given twice.
 */
export function parseCommandLine<TOptions extends OptionsConfig>(argv: readonly string[], options: TOptions): CommandLine<TOptions> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option' || options[token.name]?.multiple === true) continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given twice; give it once`);
    seen.add(token.name);
  }
  return { values: parsed.values, positionals: parsed.positionals } as CommandLine<TOptions>;
}

/** Refuses positionals beyond the `max` a command takes. */
export function atMost(positionals: readonly string[], max: number): void {
  const extra = positionals[max];
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
}
