import { execFileSync } from 'node:child_process';

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
