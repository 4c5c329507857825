import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Commands a child answers: each name maps its argument to its result. */
export type Api = Record<string, { args: unknown; result: unknown }>;

type Request = { readonly id: number; readonly name: string; readonly args: unknown };
type Reply = { readonly id: number; readonly ok: true; readonly result: unknown } | { readonly id: number; readonly ok: false; readonly error: string };

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface ForkOptions {
  /** Node flags before `--import tsx`, e.g. `--expose-gc`, `--cpu-prof`. */
  readonly nodeFlags?: readonly string[];
  /** Pins every thread of the child to these CPUs (`taskset -a -pc`). */
  readonly cpus?: string;
}

/**
 * The parent's end of a bench child process (server or fleet) started with `fork` and
 * driven over IPC. Each request has a deadline: a child that does not answer in time, or
 * exits, rejects it with a message naming the child and the command.
 */
export class ChildLink<T extends Api> {
  readonly #child: ChildProcess;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void; timer: NodeJS.Timeout }>();
  #next = 0;
  #exited: string | undefined;

  private constructor(
    readonly name: string,
    child: ChildProcess,
  ) {
    this.#child = child;
    child.on('message', (message: Reply) => {
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      clearTimeout(pending.timer);
      if (message.ok) pending.resolve(message.result);
      else pending.reject(new Error(`${name}: ${message.error}`));
    });
    child.on('exit', (code, signal) => {
      this.#exited = signal ? `killed by ${signal}` : `exited with code ${code}`;
      for (const [id, pending] of this.#pending) {
        clearTimeout(pending.timer);
        pending.reject(new Error(`${name} ${this.#exited} while a command was pending (#${id})`));
      }
      this.#pending.clear();
    });
  }

  /** Forks `bench/<script>` under tsx with an IPC channel; stdout and stderr are inherited. */
  static fork<T extends Api>(name: string, script: string, options: ForkOptions = {}): ChildLink<T> {
    const child = fork(path.join(REPO, 'bench', script), [], {
      cwd: REPO,
      execArgv: [...(options.nodeFlags ?? []), '--import', 'tsx'],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    if (options.cpus !== undefined && child.pid !== undefined) {
      execFileSync('taskset', ['-a', '-pc', options.cpus, String(child.pid)], { stdio: 'ignore' });
    }
    return new ChildLink<T>(name, child);
  }

  /** The parent's end of a child started some other way with an IPC channel (a cluster worker). */
  static over<T extends Api>(name: string, child: ChildProcess): ChildLink<T> {
    return new ChildLink<T>(name, child);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  request<K extends keyof T & string>(name: K, args: T[K]['args'], timeoutMs: number): Promise<T[K]['result']> {
    if (this.#exited) return Promise.reject(new Error(`${this.name} ${this.#exited}; cannot run ${name}`));
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`${this.name} did not finish "${name}" within ${(timeoutMs / 1000).toFixed(0)} s`));
      }, timeoutMs);
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer });
      this.#child.send({ id, name, args } satisfies Request);
    });
  }

  /** Resolves once the child has exited, killing it after `graceMs`. */
  async exit(graceMs = 5_000): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  /** Kills the child now (on abort). */
  kill(): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill('SIGKILL');
  }
}

/**
 * The child's end: answers each request with its handler's result or error message. The
 * child exits when its parent goes away, so an aborted bench leaves nothing running.
 */
export function serveCommands<T extends Api>(handlers: { [K in keyof T]: (args: T[K]['args']) => Promise<T[K]['result']> | T[K]['result'] }): void {
  if (!process.send) throw new Error('a bench child must be started with child_process.fork (it needs an IPC channel)');
  process.on('disconnect', () => process.exit(0));
  process.on('message', (request: Request) => {
    const handler = handlers[request.name];
    const reply = (message: Reply) => process.connected && process.send?.(message);
    if (!handler) {
      reply({ id: request.id, ok: false, error: `unknown command "${request.name}"` });
      return;
    }
    Promise.resolve()
      .then(() => handler(request.args as never))
      .then(
        (result) => reply({ id: request.id, ok: true, result }),
        (error: unknown) => reply({ id: request.id, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
      );
  });
}

/**
 * Milliseconds on CLOCK_MONOTONIC, which every process on the machine shares: a time taken
 * in the fleet can be subtracted from one taken in the server.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
