import { readdirSync, readFileSync } from 'node:fs';

/** CPU time of the whole machine and of its Postgres processes, from /proc (Linux; zero elsewhere). */
export interface MachineCpu {
  /** Busy time (all but idle and iowait) summed over every CPU, ms. */
  readonly busyMs: number;
  /**
   * User + system time of the processes named `postgres`, ms, with that of their exited
   * children (the postmaster reaps each backend, so a closed connection's time stays counted).
   */
  readonly postgresMs: number;
}

// USER_HZ: /proc reports CPU time in clock ticks of 10 ms on Linux.
const TICK_MS = 10;

export function sampleMachineCpu(): MachineCpu {
  return { busyMs: machineBusyMs(), postgresMs: postgresMs() };
}

function machineBusyMs(): number {
  const line = readOr('/proc/stat').split('\n')[0] ?? '';
  // cpu user nice system idle iowait irq softirq steal …
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (ticks.length < 8) return 0;
  const [user, nice, system, , , irq, softirq, steal] = ticks as [number, number, number, number, number, number, number, number];
  return (user + nice + system + irq + softirq + steal) * TICK_MS;
}

function postgresMs(): number {
  let total = 0;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    const stat = readOr(`/proc/${pid}/stat`);
    // pid (comm) state …: utime, stime, cutime, cstime are fields 14–17; comm may hold spaces, so split after its ')'.
    const close = stat.lastIndexOf(')');
    if (close === -1 || stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue;
    const fields = stat.slice(close + 2).split(' ').slice(11, 15).map(Number);
    total += fields.reduce((sum, ticks) => sum + ticks, 0) * TICK_MS;
  }
  return total;
}

/** A /proc file's text, or '' where there is none (not Linux, a process gone). */
export function readOr(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
