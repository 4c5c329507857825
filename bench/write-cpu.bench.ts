/**
 * What a write costs the control plane (issue 28): the server's CPU per write through the HTTP
 * API, one PUT after another, and `chancery apply -f` of a file of Dataplanes (wall time, and
 * the server's CPU per document), on an empty store with no node connected.
 *
 *   npm run bench -- write-cpu [--store pglite|memory] [--puts 2000] [--files 1000,10000]
 *                              [--services 50] [--cpu-prof DIR]
 *
 * The server is `chancery run` as npm start runs it (package.json), on a fresh store in a
 * temporary directory, ports 0. Its CPU is read from /proc (user + system, 10 ms ticks) before
 * and after each phase. The dataplanes are the benches' hub shape (bench/support/mesh-shape.ts).
 * With --cpu-prof DIR the server writes a V8 CPU profile there when it stops (node --cpu-prof).
 * Goal: under 0.3 ms of server CPU a write.
 */
import { type ChildProcess, execSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { dataplane, type MeshShape } from './support/mesh-shape.js';
import { printTable } from './support/print-table.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const TICK_MS = 10;

interface Server {
  readonly child: ChildProcess;
  readonly api: string;
  readonly exited: Promise<unknown>;
  /** CPU ms a second the server spends with nothing to do: its timers, and V8's sampler with --cpu-prof (50-60 ms). */
  readonly restingMs: number;
}

export default async function writeCpu(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      store: { type: 'string', default: 'pglite' },
      puts: { type: 'string', default: '2000' },
      files: { type: 'string', default: '1000,10000' },
      services: { type: 'string', default: '50' },
      'cpu-prof': { type: 'string' },
    },
  });
  const puts = Number(values.puts);
  const files = values.files === '' ? [] : values.files.split(',').map(Number);
  const services = Number(values.services);
  console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}; store ${values.store}`);
  const rows: string[][] = [];

  const putServer = await startServer(values.store, values['cpu-prof']);
  try {
    const shape: MeshShape = { nodes: puts, services };
    const before = await cpuMs(putServer.child.pid!);
    const started = performance.now();
    for (let index = 0; index < puts; index++) {
      const body = dataplane(index, shape) as { name: string };
      const response = await fetch(`${putServer.api}/meshes/default/dataplanes/${body.name}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (response.status !== 201) throw new Error(`PUT ${body.name} answered ${response.status}: ${await response.text()}`);
    }
    const wall = performance.now() - started;
    const cpu = (await cpuMs(putServer.child.pid!)) - before;
    const settled = (await idleCpuMs(putServer)) - before;
    rows.push(row(`${puts} PUTs, one at a time`, puts, wall, cpu, settled));
  } finally {
    await stopServer(putServer);
  }

  for (const count of files) {
    const server = await startServer(values.store, values['cpu-prof']);
    const dir = await mkdtemp(path.join(tmpdir(), 'chancery-apply-'));
    try {
      const file = path.join(dir, 'dataplanes.json');
      const shape: MeshShape = { nodes: count, services };
      await writeFile(file, JSON.stringify(Array.from({ length: count }, (_, index) => dataplane(index, shape))));
      const before = await cpuMs(server.child.pid!);
      const started = performance.now();
      execSync(`${cliCommand()} apply -f ${file} --api-address ${server.api.replace('http://', '')}`, { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
      const wall = performance.now() - started;
      const cpu = (await cpuMs(server.child.pid!)) - before;
      const settled = (await idleCpuMs(server)) - before;
      rows.push(row(`apply -f of ${count} Dataplanes`, count, wall, cpu, settled));
    } finally {
      await stopServer(server);
      await rm(dir, { recursive: true, force: true });
    }
  }
  printTable(
    `Writes through the API, store ${values.store} (server CPU: user + system, ${TICK_MS} ms ticks; until idle: the generation ahead of the nodes included)`,
    ['what', 'wall', 'server CPU until answered', 'a write', 'server CPU until idle', 'a write'],
    rows,
  );
}

function row(what: string, writes: number, wallMs: number, cpuMs: number, settledMs: number): string[] {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const each = (ms: number) => `${(ms / writes).toFixed(3)} ms`;
  return [what, seconds(wallMs), seconds(cpuMs), each(cpuMs), seconds(settledMs), each(settledMs)];
}

/**
 * The process's CPU time once it has gone idle: what a write leaves to do after its answer
 * (generating every changed dataplane ahead of its node, in the idle lane) counts too. Idle is
 * less than two ticks in a second more than the server spent at rest before the writes.
 */
async function idleCpuMs(server: Server): Promise<number> {
  const pid = server.child.pid!;
  let last = await cpuMs(pid);
  for (;;) {
    const now = await cpuMsIn(pid, 1_000);
    if (now - last < server.restingMs + 2 * TICK_MS) return now;
    last = now;
  }
}

/** The process's CPU time after `ms` more. */
async function cpuMsIn(pid: number, ms: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, ms));
  return cpuMs(pid);
}

/** package.json's `start` command, as npm runs it, for `chancery run`; its compilation is run here first. */
function startArgv(): { env: Record<string, string>; argv: string[] } {
  const steps = packageScripts().start.split('&&').map((step) => step.trim());
  for (const step of steps.slice(0, -1)) execSync(step, { cwd: ROOT, stdio: 'inherit' });
  const words = steps.at(-1)!.split(/\s+/).filter((word) => word !== 'exec');
  const env = Object.fromEntries(words.filter((word) => /^[A-Z_]+=/.test(word)).map((word) => word.split('=') as [string, string]));
  const [binary, ...rest] = words.filter((word) => !/^[A-Z_]+=/.test(word));
  return { env, argv: [binary === 'node' ? process.execPath : binary!, ...rest] };
}

/** The `chancery` command line for the client (the compiled entry npm start uses, without `run`). */
function cliCommand(): string {
  const { argv } = startArgv();
  return argv.slice(0, -1).join(' ');
}

let scripts: { start: string } | undefined;
function packageScripts(): { start: string } {
  scripts ??= (JSON.parse(execSync('cat package.json', { cwd: ROOT, encoding: 'utf8' })) as { scripts: { start: string } }).scripts;
  return scripts;
}

async function startServer(store: string, profileDir: string | undefined): Promise<Server> {
  const { env, argv } = startArgv();
  const dir = store === 'memory' ? undefined : await mkdtemp(path.join(tmpdir(), 'chancery-writes-'));
  const [binary, ...args] = argv;
  const profile = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];
  const child = spawn(
    binary!,
    [...profile, ...args, '--store', dir === undefined ? 'memory' : `pglite:${dir}`, '--xds-address', '127.0.0.1:0', '--api-address', '127.0.0.1:0', '--log-format', 'json'],
    { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve)).then(() => (dir === undefined ? undefined : rm(dir, { recursive: true, force: true })));
  const api = await new Promise<string>((resolve, reject) => {
    // Every line is read (a full pipe would stall the server); the start line names the API.
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('"msg":"chancery started"')) resolve(`http://${(JSON.parse(line) as { api: string }).api}`);
    });
    void exited.then(() => reject(new Error('chancery run exited before it started')));
  });
  const started = await cpuMs(child.pid!);
  return { child, api, exited, restingMs: (await cpuMsIn(child.pid!, 1_000)) - started };
}

async function stopServer(server: Server): Promise<void> {
  server.child.kill('SIGTERM');
  await server.exited;
}

/** A process's CPU time so far, user + system, ms. */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}
