import { startHarness, type Harness } from './harness.js';
import { OpenStreams } from './open-streams.js';
import { perTest } from './per-test.js';

/** The harness of the test running now, and the streams it opens to it. */
export interface HarnessOfTests extends Harness {
  /** Streams to this harness, closed before the harness stops. */
  readonly streams: OpenStreams;
}

/** How the harness starts: `startHarness` options, and resources to apply to it. */
export type HarnessForOptions = NonNullable<Parameters<typeof startHarness>[0]> & { readonly resources?: readonly unknown[] };

/**
 * Registers hooks of a test file (or a `describe`): before each test (or, with `'all'`, before
 * them all) a harness is started with `options` (or what the function returns then: a fresh
 * clock each time) and their `resources` applied to it; after, the streams opened through
 * `streams` are closed and the harness stopped. What it returns stands for the harness of the
 * test running now, so a test file reads `harness.cp` as it would its own.
 */
export function harnessFor(options: HarnessForOptions | (() => HarnessForOptions) = {}, scope: 'each' | 'all' = 'each'): HarnessOfTests {
  return perTest(
    async () => {
      const { resources = [], ...start } = typeof options === 'function' ? options() : options;
      const harness = await startHarness(start);
      for (const resource of resources) await harness.cp.apply(resource);
      return { ...harness, streams: new OpenStreams(() => harness.xds) };
    },
    async ({ streams, stop }) => {
      streams.closeAll();
      await stop();
    },
    scope,
  );
}
