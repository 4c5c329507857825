import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { monotonicMs } from './child-link.js';
import { PhaseProfiler, type PhaseProfile } from './cpu-profile.js';

export interface MemorySample {
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly arrayBuffers: number;
  readonly rss: number;
}

export interface UsageSample {
  /** Monotonic ms (shared with the fleet). */
  readonly at: number;
  /** CPU time of this process since it started, ms. */
  readonly cpuMs: number;
  /** The longest event-loop stall since the previous sample, ms. */
  readonly loopStallMaxMs: number;
  /** The 99th percentile of event-loop delay since the previous sample, ms (perf_hooks, 10 ms resolution). */
  readonly loopLagP99Ms: number;
  /** Resident set size now, bytes. */
  readonly rss: number;
  /** The largest resident set size this process has had, bytes. */
  readonly maxRss: number;
}

/** The commands every bench server child answers about itself, whatever it serves. */
export type ProbeApi = {
  memory: { args: null; result: MemorySample };
  usage: { args: null; result: UsageSample };
  /** Starts the V8 sampling profiler (for `--cpu-prof`), and the allocation sampler too with `allocations` (`--alloc-prof`). */
  profileStart: { args: { allocations?: boolean } | null; result: null };
  /** Stops it, writes the profile to `file`, and returns the hottest functions since `profileStart`. */
  profileStop: { args: { top: number; file: string }; result: PhaseProfile };
};

/**
 * Starts watching this process's event loop and returns the handlers of `ProbeApi`. The stall is
 * the longest the loop went without running a 10 ms interval timer (monitorEventLoopDelay missed
 * multi-second stalls after reset() here, so the bench measures it itself). Memory is read after
 * a forced GC: the process needs `--expose-gc`, which ChildLink.fork gives the servers.
 */
export function processProbes(): { [K in keyof ProbeApi]: (args: ProbeApi[K]['args']) => Promise<ProbeApi[K]['result']> | ProbeApi[K]['result'] } {
  const period = 10;
  let lastInterval = monotonicMs();
  let longestStall = 0;
  setInterval(() => {
    const now = monotonicMs();
    longestStall = Math.max(longestStall, now - lastInterval - period);
    lastInterval = now;
  }, period).unref();
  const lag = monitorEventLoopDelay({ resolution: period });
  lag.enable();
  const profiler = new PhaseProfiler();
  return {
    async memory() {
      // Twice, with a turn between: FinalizationRegistry callbacks (the encode cache) run in between.
      const collect = globalThis.gc;
      if (!collect) throw new Error('a bench server needs --expose-gc to measure memory');
      collect();
      await nextTurn();
      collect();
      const { heapUsed, heapTotal, external, arrayBuffers, rss } = process.memoryUsage();
      return { heapUsed, heapTotal, external, arrayBuffers, rss };
    },
    usage() {
      const { user, system } = process.cpuUsage();
      const sample = {
        at: monotonicMs(),
        cpuMs: (user + system) / 1000,
        loopStallMaxMs: Math.max(longestStall, monotonicMs() - lastInterval - period),
        loopLagP99Ms: lag.percentile(99) / 1e6,
        rss: process.memoryUsage.rss(),
        maxRss: process.resourceUsage().maxRSS * 1024,
      };
      longestStall = 0;
      lag.reset();
      return sample;
    },
    async profileStart(options) {
      await profiler.start(options ?? {});
      return null;
    },
    profileStop: ({ top, file }) => profiler.stop(top, file),
  };
}
