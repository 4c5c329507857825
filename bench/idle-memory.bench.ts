/**
 * What `npm start` holds idle (issue 28): the resident memory of `chancery run` on an empty
 * store, PGlite (the default: a fresh directory, and that directory reopened) and memory, once
 * it has started and sat idle.
 *
 *   npm run bench -- idle-memory [--stores pglite,pglite-reopened,memory] [--seconds 10] [--runs 1]
 *
 * Each run starts the command `npm start` runs (package.json), ports 0, reads its RSS from
 * /proc every 250 ms for --seconds after the start line, and stops it with SIGTERM. The table
 * shows the RSS at the start line, at the end (idle), and the highest seen (VmHWM, the peak of
 * the whole run, start included). Goal: PGlite idle ≤ 200 MB.
 */
import { type ChildProcess, execSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { printTable } from './support/print-table.js';

const ROOT = path.resolve(import.meta.dirname, '..');

type Store = 'pglite' | 'pglite-reopened' | 'memory';
const STORES: readonly Store[] = ['pglite', 'pglite-reopened', 'memory'];

/** A command line and the variables it sets. */
interface StartCommand {
  readonly env: Readonly<Record<string, string>>;
  readonly argv: readonly string[];
}

interface Sample {
  readonly startedMs: number;
  readonly atStart: number;
  readonly idle: number;
  readonly peak: number;
}

export default async function idleMemory(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: { stores: { type: 'string', default: STORES.join(',') }, seconds: { type: 'string', default: '10' }, runs: { type: 'string', default: '1' } },
  });
  const stores = values.stores.split(',') as Store[];
  for (const store of stores) if (!STORES.includes(store)) throw new Error(`--stores: unknown store "${store}"; known: ${STORES.join(', ')}`);
  const seconds = Number(values.seconds);
  const runs = Number(values.runs);
  const command = startCommand();
  console.log(`command: ${Object.entries(command.env).map(([name, value]) => `${name}=${value} `).join('')}${command.argv.join(' ')}\nmachine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}; idle for ${seconds} s after the start line`);
  const rows: string[][] = [];
  for (const store of stores) {
    for (let run = 1; run <= runs; run++) {
      const sample = await measure(command, store, seconds);
      rows.push([store, String(run), `${(sample.startedMs / 1000).toFixed(1)} s`, mb(sample.atStart), mb(sample.idle), mb(sample.peak)]);
    }
  }
  printTable('chancery run on an empty store: resident memory (MB)', ['store', 'run', 'start', 'RSS at start', 'RSS idle', 'peak (VmHWM)'], rows);
}

/**
 * The command line of package.json's `start` script, as npm runs it: what comes before its
 * last `&&` is run here once (the compilation), the rest (without `exec`) is measured.
 */
function startCommand(): StartCommand {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const steps = pkg.scripts.start.split('&&').map((step) => step.trim());
  for (const step of steps.slice(0, -1)) execSync(step, { cwd: ROOT, stdio: 'inherit' });
  const words = steps.at(-1)!.split(/\s+/).filter((word) => word !== 'exec');
  const env = Object.fromEntries(words.filter((word) => /^[A-Z_]+=/.test(word)).map((word) => word.split('=') as [string, string]));
  // npm puts node_modules/.bin on the PATH; the bench resolves the binary itself.
  const [binary, ...rest] = words.filter((word) => !/^[A-Z_]+=/.test(word));
  return { env, argv: [binary === 'node' ? process.execPath : path.join(ROOT, 'node_modules', '.bin', binary!), ...rest] };
}

async function measure(command: StartCommand, store: Store, seconds: number): Promise<Sample> {
  let dir: string | undefined;
  let spec = 'memory';
  if (store !== 'memory') {
    dir = await mkdtemp(path.join(tmpdir(), 'chancery-idle-'));
    spec = `pglite:${dir}`;
    // Reopened: a first start creates the directory (initdb); the measured start opens it.
    if (store === 'pglite-reopened') await stop(await start(command, spec));
  }
  try {
    const began = performance.now();
    const running = await start(command, spec);
    const startedMs = performance.now() - began;
    const atStart = await rss(running.pid!);
    const end = performance.now() + seconds * 1000;
    let idle = atStart;
    while (performance.now() < end) {
      await sleep(250);
      idle = await rss(running.pid!);
    }
    const peak = await statusField(running.pid!, 'VmHWM');
    await stop(running);
    return { startedMs, atStart, idle, peak };
  } finally {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  }
}

function start(command: StartCommand, store: string): Promise<ChildProcess> {
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('CHANCERY_'))), ...command.env };
  const [binary, ...args] = command.argv;
  const child = spawn(binary!, [...args, '--store', store, '--xds-address', '127.0.0.1:0', '--api-address', '127.0.0.1:0', '--drain-period', '0'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`;
      if (line.includes('"msg":"chancery started"')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`chancery run exited (${code}) before it started:\n${output}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

async function rss(pid: number): Promise<number> {
  return statusField(pid, 'VmRSS');
}

/** A `kB` field of /proc/PID/status, in bytes. */
async function statusField(pid: number, field: string): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status);
  if (match === null) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(match[1]) * 1024;
}

function mb(bytes: number): string {
  return (bytes / 1_048_576).toFixed(0);
}
