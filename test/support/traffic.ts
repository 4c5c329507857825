import { budget, SLOWDOWN } from './budget.js';
import type { EchoReply } from './echo-backend.js';

/** Anything that makes one call and says who served it: a gRPC echo client, an HTTP client through Envoy. */
export interface Caller {
  echo(deadlineMs: number): Promise<EchoReply>;
}

/** Every RPC's deadline: long enough for a first call that waits for xDS resolution, on this machine. */
export const RPC_DEADLINE_MS = budget(10_000);

/**
 * How long `Traffic.during` waits by default: longer than any disruption a test runs calls
 * through (the failover test cuts for at most about 30 s), shorter than vitest's 60 s test
 * timeout; both scale alike on a slow machine.
 */
export const DURING_MS = budget(45_000);

export const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Every call a test made, who served it, and every failure with its message. */
export class Traffic {
  readonly servedBy: string[] = [];
  readonly failures: string[] = [];
  /** Every call's outcome in the order they completed: who served it, or `failed`. */
  readonly #outcomes: string[] = [];

  constructor(readonly client: Caller) {}

  get completed(): number {
    return this.servedBy.length + this.failures.length;
  }

  /** One RPC; a failure is recorded, not thrown, so a test counts them all. */
  async call(): Promise<EchoReply | undefined> {
    try {
      const reply = await this.client.echo(RPC_DEADLINE_MS);
      this.servedBy.push(reply.servedBy);
      this.#outcomes.push(reply.servedBy);
      return reply;
    } catch (error) {
      this.failures.push(String(error));
      this.#outcomes.push('failed');
      return undefined;
    }
  }

  /** `count` sequential RPCs; returns who served each. */
  async calls(count: number): Promise<string[]> {
    const served: string[] = [];
    for (let i = 0; i < count; i++) served.push((await this.call())?.servedBy ?? 'failed');
    return served;
  }

  /**
   * Makes RPCs until `condition` holds on the last `window` outcomes since it started, at most
   * `attempts` RPCs (more on a slow machine), `pauseMs` apart. The outcomes are every call's,
   * its own and those made meanwhile by `during`: round robin over two callers taking turns
   * would give each of them only every other backend.
   */
  async until(
    what: string,
    condition: (recent: string[]) => boolean,
    { attempts = 300, window = 1, pauseMs = 0 } = {},
  ): Promise<void> {
    const from = this.#outcomes.length;
    const most = Math.ceil(attempts * SLOWDOWN);
    for (let attempt = 0; attempt < most; attempt++) {
      await this.call();
      const recent = this.#outcomes.slice(Math.max(from, this.#outcomes.length - window));
      if (recent.length === window && condition(recent)) return;
      // Spreads a bounded number of RPCs over a wait that is the client's or the network's.
      if (pauseMs > 0) await pause(pauseMs);
    }
    throw new Error(`no ${what} after ${most} RPCs; failures: ${this.failures.slice(0, 3).join(' | ') || 'none'}`);
  }

  /**
   * Makes calls back to back until `stop` settles; resolves once the last one is done. Fails
   * (after the call in flight) when `stop` has not settled within `timeoutMs`, naming `what`
   * it waited for: the default wait ends before the 60 s a test may take, so the failure is
   * this message rather than the test's timeout.
   */
  async during(stop: Promise<unknown>, what = 'the end of what the calls ran during', timeoutMs = DURING_MS): Promise<void> {
    let stopped = false;
    const settled = () => (stopped = true);
    void stop.then(settled, settled);
    const deadline = Date.now() + timeoutMs;
    while (!stopped) {
      if (Date.now() > deadline) {
        const failed = this.failures.length === 0 ? 'none failed' : `${this.failures.length} failed, the first: ${this.failures[0]}`;
        throw new Error(`no ${what} within ${timeoutMs} ms of calls (${this.completed} made, ${failed})`);
      }
      await this.call();
    }
  }
}

export function tally(served: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of served) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

/**
 * Re-checks a condition (perhaps a request to a server) every `every` ms, at most `attempts`
 * times on a quiet machine, more on a slow one (`SLOWDOWN`): for what only polling can see,
 * such as another process's state.
 */
export async function eventually(what: string, condition: () => boolean | Promise<boolean>, { attempts = 500, every = 10 } = {}): Promise<void> {
  const most = Math.ceil(attempts * SLOWDOWN);
  for (let attempt = 0; attempt < most; attempt++) {
    if (await condition()) return;
    await pause(every);
  }
  throw new Error(`no ${what} after ${most} checks`);
}
