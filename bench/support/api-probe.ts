import { setTimeout as sleep } from 'node:timers/promises';
import { spread, type Spread } from './stats.js';
import { browserAgent, timedGet } from './ui-http.js';

/** One path's answers while the probe ran. */
export interface ProbedPath {
  readonly path: string;
  readonly requests: number;
  /** Answers other than 200, and requests that failed or took more than 10 s. */
  readonly failed: number;
  readonly ms: Spread;
}

/**
 * An operator's view of the API while the server is under load (issue 12: `/healthz`, `/readyz`
 * and the API answer within 100 ms at p99 during a storm): GETs each path in turn, one request
 * at a time on one keep-alive connection, every `intervalMs`, until stopped.
 */
export class ApiProbe {
  readonly #times = new Map<string, number[]>();
  readonly #failed = new Map<string, number>();
  #running = true;
  readonly #loop: Promise<void>;

  constructor(base: string, paths: readonly string[], intervalMs = 50) {
    for (const path of paths) {
      this.#times.set(path, []);
      this.#failed.set(path, 0);
    }
    this.#loop = this.#probe(base, paths, intervalMs);
  }

  async stop(): Promise<ProbedPath[]> {
    this.#running = false;
    await this.#loop;
    return [...this.#times].map(([path, ms]) => ({ path, requests: ms.length + (this.#failed.get(path) ?? 0), failed: this.#failed.get(path) ?? 0, ms: spread(ms) }));
  }

  async #probe(base: string, paths: readonly string[], intervalMs: number): Promise<void> {
    const agent = browserAgent(1);
    try {
      while (this.#running) {
        for (const path of paths) {
          const answer = await timedGet(`${base}${path}`, agent, 10_000).catch(() => undefined);
          if (answer?.status === 200) this.#times.get(path)!.push(answer.ms);
          else this.#failed.set(path, (this.#failed.get(path) ?? 0) + 1);
        }
        await sleep(intervalMs);
      }
    } finally {
      agent.destroy();
    }
  }
}
