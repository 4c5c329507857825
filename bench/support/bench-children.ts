import { execFileSync } from 'node:child_process';
import { NODE_FLAGS } from '../../src/cli/node-flags.js';

/**
 * Node flags of a server child, the ceiling's too: `chancery run`'s own (src/cli/node-flags.ts),
 * a heap for 10,000 sessions, `gc()` for the memory columns, then `BENCH_SERVER_FLAGS` (V8 takes a
 * flag's last value: `BENCH_SERVER_FLAGS=--max-semi-space-size=16` measures V8's default).
 */
export function serverNodeFlags(): string[] {
  return ['--expose-gc', '--max-old-space-size=4096', ...NODE_FLAGS, ...(process.env.BENCH_SERVER_FLAGS?.split(' ').filter(Boolean) ?? [])];
}

interface Killable {
  kill(): void;
}

/**
 * The child processes of one bench run. Each is killed when the run fails, and every one still
 * alive when it overstays its deadline, so an aborted run leaves no server behind.
 */
export class BenchChildren {
  readonly #live = new Set<Killable>();

  track<T extends Killable>(child: T): T {
    this.#live.add(child);
    return child;
  }

  /** Kills every child still tracked (a no-op for those already gone) and forgets them. */
  killAll(): void {
    for (const child of this.#live) child.kill();
    this.#live.clear();
  }

  /** Runs `run`; past `deadlineMs` the children are killed and the process exits with 1, naming `bench`. */
  async withDeadline<T>(bench: string, deadlineMs: number, run: () => Promise<T>): Promise<T> {
    const deadline = setTimeout(() => {
      console.error(`\n[${bench}] ABORTED: the run exceeded its deadline of ${deadlineMs / 1000} s (--deadline-s); killing its child processes`);
      this.killAll();
      process.exit(1);
    }, deadlineMs);
    try {
      return await run();
    } finally {
      clearTimeout(deadline);
    }
  }
}

/** Whether `taskset` exists, to pin children to CPUs. */
export function canPin(): boolean {
  try {
    execFileSync('taskset', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
