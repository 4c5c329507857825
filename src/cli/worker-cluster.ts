import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { aggregateMetrics, type MetricsSource } from '../api/index.js';
import { ChanceryError } from '../common/index.js';

/** The variable a worker's index (1…N) reaches it by; absent in a process started by hand. */
const WORKER_INDEX = 'CHANCERY_WORKER_INDEX';

/** ms a worker waits for the primary to add up the workers' metrics. */
const GATHER_TIMEOUT = 5_000;
/** ms the primary waits for one worker's metrics: less, so a slow worker is left out of a scrape rather than failing it. */
const COLLECT_TIMEOUT = 4_000;

/** ms before a worker that exited is started again, doubled while its replacements fail to start, up to MAX. */
const RESTART_DELAY = 1_000;
const MAX_RESTART_DELAY = 30_000;

/** What a worker tells the primary once its control plane serves. */
export interface WorkerStarted {
  readonly type: 'started';
  readonly instance: string;
  readonly xds: string;
  readonly api?: string;
}

/** What the primary tells a worker. */
interface StopMessage {
  readonly type: 'stop';
}

/**
 * A scrape of `/metrics` on a worker: the worker asks the primary to `gather`, the primary asks
 * every serving worker to `collect` its own (prom-client JSON), adds them up and answers.
 */
type MetricsMessage =
  | { readonly type: 'metrics:gather'; readonly id: number }
  | { readonly type: 'metrics:gathered'; readonly id: number; readonly text: string }
  | { readonly type: 'metrics:gathered'; readonly id: number; readonly error: string }
  | { readonly type: 'metrics:collect'; readonly id: number }
  | { readonly type: 'metrics:collected'; readonly id: number; readonly metrics: readonly object[] };

/** A message between primary and workers, read loosely: any field may be missing. */
type Incoming = Partial<{ type: string; id: number; text: string; error: string; metrics: readonly object[] }> | undefined;

/** A worker exited before its control plane started: the start fails, as a single process's would. */
export class WorkerStartFailedError extends ChanceryError {
  readonly code = 'CHANCERY_CLI_WORKER_START_FAILED';
  constructor(
    readonly index: number,
    readonly exit: string,
  ) {
    super(`could not start: worker ${index} exited (${exit}) before it served; its log lines above say why`);
  }
}

/** This process's worker index when it is a worker of `chancery run --workers`, else undefined. */
export function workerIndex(): number | undefined {
  if (!cluster.isWorker) return undefined;
  const index = Number(process.env[WORKER_INDEX]);
  return Number.isInteger(index) && index > 0 ? index : undefined;
}

/** In a worker: tells the primary the control plane serves. */
export function reportStarted(started: Omit<WorkerStarted, 'type'>): void {
  process.send?.({ type: 'started', ...started } satisfies WorkerStarted);
}

/**
 * In a worker: resolves when the primary asks it to stop. Listened for before the control plane
 * starts; the primary asks only workers that said they serve.
 */
export function primaryAsksToStop(): Promise<string> {
  return new Promise((resolve) => {
    const listen = (message: unknown) => {
      if ((message as Incoming)?.type !== 'stop') return;
      process.off('message', listen);
      resolve('asked by the primary');
    };
    process.on('message', listen);
  });
}

/** In a worker: answers the primary's requests for this worker's metrics. */
export function answerMetrics(json: () => Promise<readonly object[]>): void {
  process.on('message', (message: Incoming) => {
    if (message?.type !== 'metrics:collect' || message.id === undefined) return;
    const { id } = message;
    const answer = (metrics: readonly object[]) => process.send?.({ type: 'metrics:collected', id, metrics } satisfies MetricsMessage);
    json().then(answer, () => answer([]));
  });
}

/** In a worker: what `/metrics` serves, every worker's metrics added up by the primary. */
export function metricsOfAllWorkers(own: MetricsSource): MetricsSource {
  const waiting = new Map<number, (reply: { text: string } | { error: string }) => void>();
  let requests = 0;
  process.on('message', (message: Incoming) => {
    if (message?.type !== 'metrics:gathered' || message.id === undefined) return;
    waiting.get(message.id)?.(message.error === undefined ? { text: message.text ?? '' } : { error: message.error });
  });
  return {
    contentType: own.contentType,
    text: () =>
      new Promise((resolve, reject) => {
        const id = ++requests;
        const timer = setTimeout(() => answered({ error: `the primary did not add up the workers' metrics within ${GATHER_TIMEOUT} ms` }), GATHER_TIMEOUT);
        const answered = (reply: { text: string } | { error: string }) => {
          clearTimeout(timer);
          waiting.delete(id);
          if ('text' in reply) resolve(reply.text);
          else reject(new Error(reply.error));
        };
        waiting.set(id, answered);
        process.send?.({ type: 'metrics:gather', id } satisfies MetricsMessage);
      }),
  };
}

export interface SuperviseOptions {
  readonly count: number;
  readonly logger: Logger;
  /** Resolves with the signal that asks the whole of `chancery run` to stop. */
  readonly stopRequested: () => Promise<string>;
}

/**
 * The primary of `chancery run --workers N`: starts N worker processes that each run a control
 * plane of their own (an instance: its sessions, its store connection) on the same xDS and API
 * ports, waits until every one serves, starts a worker again in the place of one that dies, and
 * on SIGINT or SIGTERM has each drain and waits for them. It serves nothing itself. Resolves
 * true when every worker exited cleanly; rejects with `WorkerStartFailedError` when one could
 * not start (the others stopped first).
 *
 * Each worker accepts connections from the shared listening sockets itself (SCHED_NONE): the
 * primary's round robin would pass every connection's handle through the primary and wait for
 * the busy worker to acknowledge it, one at a time, which a connect storm cannot afford. The
 * kernel gives a connection to whichever worker accepts first, so a busier worker takes fewer.
 */
export async function superviseWorkers({ count, logger, stopRequested }: SuperviseOptions): Promise<boolean> {
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  const log = logger.child({ primary: process.pid });
  // Listened for before the first fork: a signal during start-up stops the workers too.
  const stop = stopRequested();
  const pool = new WorkerPool(log);
  const startup = Promise.all(Array.from({ length: count }, (_, at) => pool.start(at + 1)));
  const first = await Promise.race([startup.then((reports) => ({ reports }), (error: unknown) => ({ error })), stop.then((signal) => ({ signal }))]);
  if ('error' in first) {
    await pool.stop();
    throw first.error;
  }
  if ('reports' in first) {
    const workers = first.reports.map(({ instance }, at) => ({ index: at + 1, instance, pid: pool.pid(at + 1) }));
    log.info({ workers, xds: first.reports[0]!.xds, api: first.reports[0]!.api }, 'chancery workers started');
  }
  log.info({ signal: await stop }, 'stopping the workers');
  return pool.stop();
}

/** The workers of the primary, by index: started, watched, started again, asked for metrics, stopped. */
class WorkerPool {
  readonly #log: Logger;
  /** The current process of each index. */
  readonly #workers = new Map<number, Worker>();
  /** Workers whose control plane serves: the ones asked to stop, and for their metrics. */
  readonly #serving = new Set<Worker>();
  /** Metrics requests to workers waiting for their answers, by request id. */
  readonly #collecting = new Map<number, (metrics: readonly object[]) => void>();
  #collects = 0;
  #stopping = false;

  constructor(log: Logger) {
    this.#log = log;
  }

  pid(index: number): number | undefined {
    return this.#workers.get(index)?.process.pid;
  }

  /** Forks worker `index`; resolves once it serves, rejects if it exits first. Once it served, its death starts another. */
  start(index: number): Promise<WorkerStarted> {
    const worker = cluster.fork({ [WORKER_INDEX]: String(index) });
    this.#workers.set(index, worker);
    this.#log.info({ index, pid: worker.process.pid }, 'worker forked');
    // A message to a worker that is going away fails; its exit is handled where it matters.
    worker.on('error', (error) => this.#log.warn({ index, pid: worker.process.pid, err: error }, 'message to a worker failed'));
    return new Promise((resolve, reject) => {
      let served = false;
      worker.on('message', (message: Incoming) => {
        if (message?.type === 'started') {
          served = true;
          this.#serving.add(worker);
          // Told now if the stop came while it started: before, it could not have heard it.
          if (this.#stopping) this.#tellToStop(worker);
          resolve(message as WorkerStarted);
        } else if (message?.type === 'metrics:gather' && message.id !== undefined) this.#gather(worker, message.id);
        else if (message?.type === 'metrics:collected' && message.id !== undefined) this.#collecting.get(message.id)?.(message.metrics ?? []);
      });
      worker.once('exit', (code, signal) => {
        this.#serving.delete(worker);
        if (!served) return reject(new WorkerStartFailedError(index, signal ?? `code ${code}`));
        if (this.#stopping) return;
        // Its nodes' connections ended with it: they reconnect, to the others or to the new one,
        // and are served from the store again (I2).
        this.#log.error({ index, pid: worker.process.pid, code, signal, restartInMs: RESTART_DELAY }, 'worker exited; starting another in its place');
        this.#restart(index, RESTART_DELAY);
      });
    });
  }

  /** Has every worker drain and exit (one still starting is told when it serves); true when all exited 0. */
  async stop(): Promise<boolean> {
    this.#stopping = true;
    for (const worker of this.#serving) this.#tellToStop(worker);
    const exits = [...this.#workers.values()].map((worker) =>
      worker.isDead() ? Promise.resolve(worker.process.exitCode === 0) : new Promise<boolean>((resolve) => worker.once('exit', (code) => resolve(code === 0))),
    );
    return (await Promise.all(exits)).every(Boolean);
  }

  /** Not `unref`'d: the primary stays while a worker is due, even with none running. */
  #restart(index: number, delay: number): void {
    setTimeout(() => {
      if (this.#stopping) return;
      this.start(index).then(
        ({ instance }) => this.#log.info({ index, instance, pid: this.pid(index) }, 'worker started again'),
        () => this.#restart(index, Math.min(delay * 2, MAX_RESTART_DELAY)),
      );
    }, delay);
  }

  #tellToStop(worker: Worker): void {
    if (worker.isConnected()) worker.send({ type: 'stop' } satisfies StopMessage);
  }

  #gather(asker: Worker, id: number): void {
    const reply = (message: MetricsMessage) => asker.isConnected() && asker.send(message);
    Promise.all([...this.#serving].map((worker) => this.#collect(worker)))
      .then(aggregateMetrics)
      .then(
        (text) => reply({ type: 'metrics:gathered', id, text }),
        (error: unknown) => {
          this.#log.error({ err: error }, "adding up the workers' metrics failed");
          reply({ type: 'metrics:gathered', id, error: `adding up the workers' metrics failed: ${error instanceof Error ? error.message : String(error)}` });
        },
      );
  }

  /** One worker's metrics; nothing from one that does not answer in time or exits (it is left out of the scrape). */
  #collect(worker: Worker): Promise<readonly object[]> {
    if (!worker.isConnected()) return Promise.resolve([]);
    return new Promise((resolve) => {
      const id = ++this.#collects;
      const done = (metrics: readonly object[]) => {
        clearTimeout(timer);
        worker.off('exit', gone);
        this.#collecting.delete(id);
        resolve(metrics);
      };
      const gone = () => done([]);
      const timer = setTimeout(gone, COLLECT_TIMEOUT);
      worker.once('exit', gone);
      this.#collecting.set(id, done);
      worker.send({ type: 'metrics:collect', id } satisfies MetricsMessage);
    });
  }
}
