import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { monotonicMs } from './child-link.js';

/** The event loop's delay over one phase of a bench, measured inside the process under test. */
export interface LoopLagSample {
  readonly wallMs: number;
  /** User + system CPU of the process over the phase, ms. */
  readonly cpuMs: number;
  /**
   * Percentiles of `monitorEventLoopDelay` at a 10 ms resolution, ms, as prom-client's
   * `nodejs_eventloop_lag_*` read them: an idle loop shows ~10 ms (the sampling interval).
   */
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Percent of the phase's wall time the loop spent in stalls longer than `STALL_MS`. */
  readonly stalledPercent: number;
}

/** Matches prom-client's default `eventLoopMonitoringPrecision`, so the numbers read like `/metrics`. */
const RESOLUTION_MS = 10;
/** A gap between two 10 ms ticks longer than this counts as a stall: the target's 50 ms. */
export const STALL_MS = 50;

/**
 * Event-loop lag of this process over a phase. The histogram samples once per tick, so a
 * one-second stall among a few hundred idle ticks hardly moves its p99; the share of wall time
 * spent in long stalls, taken from a timer of its own, tells those phases apart.
 */
export class LoopLag {
  #histogram: IntervalHistogram | undefined;
  #ticker: NodeJS.Timeout | undefined;
  #startedAt = 0;
  #startCpu = 0;
  #lastTick = 0;
  #stalledMs = 0;

  start(): void {
    this.#stopTimers();
    // A fresh histogram per phase: reset() on a running one lost multi-second stalls (bench/server.ts).
    this.#histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.#histogram.enable();
    this.#startedAt = this.#lastTick = monotonicMs();
    this.#startCpu = cpuMs();
    this.#stalledMs = 0;
    this.#ticker = setInterval(() => this.#tick(), RESOLUTION_MS);
  }

  stop(): LoopLagSample {
    const histogram = this.#histogram;
    if (!histogram) throw new Error('LoopLag.stop() without start()');
    this.#tick();
    this.#stopTimers();
    const wallMs = monotonicMs() - this.#startedAt;
    const ms = (ns: number) => ns / 1e6;
    return {
      wallMs,
      cpuMs: cpuMs() - this.#startCpu,
      p50: ms(histogram.percentile(50)),
      p99: ms(histogram.percentile(99)),
      max: ms(histogram.max),
      stalledPercent: (100 * this.#stalledMs) / wallMs,
    };
  }

  #tick(): void {
    const now = monotonicMs();
    const gap = now - this.#lastTick;
    if (gap > STALL_MS) this.#stalledMs += gap;
    this.#lastTick = now;
  }

  #stopTimers(): void {
    this.#histogram?.disable();
    clearInterval(this.#ticker);
    this.#ticker = undefined;
  }
}

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}
