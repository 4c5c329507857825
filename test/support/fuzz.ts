import fc from 'fast-check';
import { expect } from 'vitest';

export interface FuzzOptions {
  /** How many generated inputs to try. */
  readonly runs: number;
  /** Stops trying new inputs after this long (what was tried still counts); default 25 s. */
  readonly timeLimitMs?: number;
}

/**
 * Runs a property-based test, bounded in count and time, with a seed that can be replayed.
 * Each run picks a fresh seed unless `FUZZ_SEED` (and `FUZZ_PATH`, to go straight to the
 * failing case) is set; a failure's message says how to replay it. Shrinking a failure against
 * a real server can take minutes, so it is off unless `FUZZ_SHRINK=1` asks for it on replay.
 */
export async function fuzz<Ts>(property: fc.IAsyncProperty<Ts>, options: FuzzOptions): Promise<void> {
  const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
  const path = process.env.FUZZ_PATH || undefined;
  const details = await fc.check(property, {
    numRuns: options.runs,
    seed,
    ...(path !== undefined && { path }),
    endOnFailure: process.env.FUZZ_SHRINK !== '1',
    plugins: [fc.interruptAfterTimeLimit(options.timeLimitMs ?? 25_000)],
  });
  if (!details.failed) return;
  const file = expect.getState().testPath ?? 'the test file';
  const replay = `FUZZ_SEED=${details.seed}${details.counterexamplePath ? ` FUZZ_PATH=${details.counterexamplePath}` : ''}`;
  throw new Error(`${fc.defaultReportMessage(details) ?? 'the property failed'}\n\nReplay it with: ${replay} npx vitest run ${file} (add FUZZ_SHRINK=1 to shrink it)`, {
    cause: details.errorInstance,
  });
}

/** Characters hostile input is made of: NUL and other controls, lone surrogates, separators, quotes, escapes. */
export const HOSTILE_CHARS = ['\u0000', '\u0001', '\t', '\n', '\r', '\u007f', '\u0085', '\ud800', '\udfff', '\u2028', '\ufeff', '"', "'", '\\', '%', '/', '?', '#', '&', '=', ':', '.', ' ', '*', '-', '🚀', 'é', 'a', 'Z', '0'];

/** Text a hostile client sends: any code units at all, hostile characters, or a lot of one. */
export const HOSTILE_TEXT: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(...HOSTILE_CHARS), maxLength: 24 }),
  fc.tuple(fc.constantFrom(...HOSTILE_CHARS), fc.integer({ min: 64, max: 20_000 })).map(([char, count]) => char.repeat(count)),
);
