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

/** `parseArgs`, strict, with its errors (unknown flag, missing value) as `UsageError`s. */
export function parseCommandLine<TOptions extends OptionsConfig>(argv: readonly string[], options: TOptions): CommandLine<TOptions> {
  try {
    return parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** Refuses positionals beyond the `max` a command takes. */
export function atMost(positionals: readonly string[], max: number): void {
  const extra = positionals[max];
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
}
