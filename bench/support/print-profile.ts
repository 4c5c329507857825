import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { PhaseProfile } from './cpu-profile.js';
import { printTable } from './print-table.js';

const PROFILES = path.join(tmpdir(), 'chancery-bench-profiles');

/** Where the `.cpuprofile` of one phase goes: `$TMPDIR/chancery-bench-profiles/<name>.cpuprofile`. */
export function profileFile(name: string): string {
  mkdirSync(PROFILES, { recursive: true });
  return path.join(PROFILES, `${name}.cpuprofile`);
}

/** Prints a phase's hottest functions, by self and by inclusive time, its allocations when sampled (per node, given `nodes`), and where its profile is. */
export function printHot(title: string, profile: PhaseProfile | undefined, nodes?: number): void {
  if (!profile) return;
  printTable(`${title}: where the time goes (self time by part, idle excluded)`, ['part', 'ms', '%'], profile.parts.map((share) => [share.part, share.ms.toFixed(0), share.percent.toFixed(1)]));
  const rows = (list: PhaseProfile['self']) => list.map((f) => [f.name, f.where, f.ms.toFixed(0), f.percent.toFixed(1)]);
  printTable(`${title}, by self time`, ['function', 'where', 'self (ms)', '%'], rows(profile.self));
  printTable(`${title}, by inclusive time`, ['function', 'where', 'total (ms)', '%'], rows(profile.inclusive));
  if (profile.allocations) {
    const perNode = (bytes: number) => (nodes === undefined ? [] : [(bytes / nodes / 1024).toFixed(2)]);
    printTable(
      `${title}: where the allocations go (bytes allocated by part, freed ones included)`,
      ['part', 'MB', ...(nodes === undefined ? [] : ['KB/node']), '%'],
      profile.allocations.map((share) => [share.part, (share.bytes / 2 ** 20).toFixed(1), ...perNode(share.bytes), share.percent.toFixed(1)]),
    );
  }
  console.log(`\nprofile: ${profile.file}`);
}
