import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { EventJson, EventsPage } from '../../src/api/index.js';
import { startTestPostgres, type TestPostgres } from '../store/test-postgres.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** A `chancery run` child process, started by `startChancery`. */
export interface ChanceryProcess {
  /** `http://127.0.0.1:<port>` of its HTTP API, from its start line. */
  readonly url: string;
  /** `127.0.0.1:<port>` of its xDS server, from its start line. */
  readonly xds: string;
  /** Its instance id, from its start line. */
  readonly instanceId: string;
  /** The start line, parsed: what `ready` names carries more than the addresses. */
  readonly started: Readonly<Record<string, unknown>>;
  /** Everything it printed so far, for failure messages. */
  output(): string;
  /** Sends SIGTERM; resolves with the exit code once it has exited. */
  stop(): Promise<number | null>;
  /** Sends SIGKILL; resolves once it has exited. */
  kill(): Promise<void>;
}

interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

const running = new Map<ChildProcess, Promise<Exit>>();

/**
 * Starts `chancery run` from the source (`node --import tsx src/cli/main.ts run`) on 127.0.0.1
 * with ports 0, plus `args`, and resolves once it logs `ready` (a JSON line on stdout naming
 * the bound addresses: `chancery started`, or `chancery workers started` from the primary of
 * `--workers`); rejects with its output if it exits first. Variables `CHANCERY_*` of the test
 * runner are not passed on.
 */
export async function startChancery(args: readonly string[], { ready: readyMessage = 'chancery started' } = {}): Promise<ChanceryProcess> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('CHANCERY_')));
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'run', '--xds-address', '127.0.0.1:0', '--api-address', '127.0.0.1:0', ...args],
    { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  running.set(child, exited);
  void exited.then(() => running.delete(child));

  let output = '';
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (output += text));
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`;
      const entry = parseLine(line);
      if (entry?.['msg'] === readyMessage) resolve(entry);
    });
    void exited.then(({ code, signal }) => reject(new Error(`chancery run exited (${code ?? signal}) before it started:\n${output}`)));
  });
  const started = await ready;
  return {
    url: `http://${String(started['api'])}`,
    xds: String(started['xds']),
    instanceId: String(started['instance']),
    started,
    output: () => output,
    async stop() {
      child.kill('SIGTERM');
      return (await exited).code;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Kills every child still running (SIGKILL) and waits for them: for `afterEach`. */
export async function killAll(): Promise<void> {
  const exits = [...running].map(([child, exited]) => {
    child.kill('SIGKILL');
    return exited;
  });
  await Promise.all(exits);
}

/** A suite of `chancery run` processes on one throwaway Postgres. */
export interface ChanceryOnPostgres {
  /** An empty database on the suite's Postgres: its URL. */
  newDatabase(): Promise<string>;
  /** Run after each test, the last added first, before every process still running is killed. */
  readonly cleanups: Array<() => unknown>;
}

/**
 * Registers the hooks of such a suite, at the top of a test file: Postgres starts before all
 * tests and stops after them; after each, its cleanups run and its processes are killed.
 */
export function chanceryOnPostgres(): ChanceryOnPostgres {
  let postgres: TestPostgres | undefined;
  const cleanups: Array<() => unknown> = [];
  beforeAll(async () => {
    postgres = await startTestPostgres();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await killAll();
  });
  afterAll(async () => {
    await postgres?.stop();
  });
  return {
    newDatabase: () => {
      if (postgres === undefined) throw new Error('chanceryOnPostgres: Postgres has not started (call it at the top of the test file)');
      return postgres.newDatabase();
    },
    cleanups,
  };
}

function parseLine(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** A JSON answer, read loosely: each test states the fields it relies on. */
export type Answer = { readonly status: number; readonly body: any };

/** Sends a request and reads the JSON answer (undefined for 204). */
export async function call(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** The whole log, through `GET /events`, a page at a time. */
export async function allEvents(url: string, after = 0): Promise<EventJson[]> {
  const events: EventJson[] = [];
  for (;;) {
    const { status, body } = await call(`${url}/events?after=${after}&limit=1000`, 'GET');
    if (status !== 200) throw new Error(`GET /events answered ${status}: ${JSON.stringify(body)}`);
    const page = body as EventsPage;
    events.push(...page.items);
    if (page.items.length < 1000) return events;
    after = page.next;
  }
}
