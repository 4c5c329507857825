import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { aggregateMetrics, type MetricsSource } from '../api/index.js';
import { ChanceryError } from '../chancery-error.js';

/** The variable a worker's index (1…N) reaches it by; absent in a process started by hand. */
const WORKER_INDEX = 'CHANCERY_WORKER_INDEX';

/** ms a worker waits for the workers' metrics, and the primary for one worker's: a scrape is not held up longer. */
const METRICS_TIMEOUT = 5_000;

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
  | { readonly type: 'metrics:collect'; readonly id: number }
  | { readonly type: 'metrics:collected'; readonly id: number; readonly metrics: readonly object[] };

/** `message` when it is the reply of `type` to request `id`. */
function replyTo<T extends MetricsMessage['type']>(message: unknown, type: T, id: number): Extract<MetricsMessage, { type: T }> | undefined {
  const reply = message as Partial<MetricsMessage> | undefined;
  return reply?.type === type && reply.id === id ? (reply as Extract<MetricsMessage, { type: T }>) : undefined;
}

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

/** In a worker: resolves when the primary asks it to stop (it was asked to, or one of its siblings failed to start). */
export function primaryAsksToStop(): Promise<string> {
  return new Promise((resolve) => {
    const listen = (message: unknown) => {
      if ((message as Partial<StopMessage>)?.type !== 'stop') return;
      process.off('message', listen);
      resolve('asked by the primary');
    };
    process.on('message', listen);
  });
}

/** In a worker: answers the primary's requests for this worker's metrics. */
export function answerMetrics(json: () => Promise<readonly object[]>): void {
  process.on('message', (message: Partial<MetricsMessage> | undefined) => {
    if (message?.type !== 'metrics:collect' || message.id === undefined) return;
    const { id } = message;
    const answer = (metrics: readonly object[]) => process.send?.({ type: 'metrics:collected', id, metrics } satisfies MetricsMessage);
    json().then(answer, () => answer([]));
  });
}

/** In a worker: what `/metrics` serves, every worker's metrics added up by the primary. */
export function metricsOfAllWorkers(own: MetricsSource): MetricsSource {
  let requests = 0;
  return {
    contentType: own.contentType,
    text: () =>
      new Promise((resolve, reject) => {
        const id = ++requests;
        const listen = (message: unknown) => {
          const reply = replyTo(message, 'metrics:gathered', id);
          if (reply === undefined) return;
          clearTimeout(timer);
          process.off('message', listen);
          resolve(reply.text);
        };
        const timer = setTimeout(() => {
          process.off('message', listen);
          reject(new Error(`the primary did not gather the workers' metrics within ${METRICS_TIMEOUT} ms`));
        }, METRICS_TIMEOUT);
        process.on('message', listen);
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
 * on SIGINT or SIGTERM has each drain and waits for them. It serves nothing itself.
 *
 * Each worker accepts connections from the shared listening sockets itself (SCHED_NONE): the
 * primary's round robin would pass every connection's handle through the primary and wait for
 * the busy worker to acknowledge it, one at a time, which a connect storm cannot afford. The
 * kernel gives a connection to whichever worker accepts first, so a busier worker takes fewer.
 */
export async function superviseWorkers({ count, logger, stopRequested }: SuperviseOptions): Promise<void> {
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  const log = logger.child({ primary: process.pid });
  const workers = new Map<number, Worker>();
  /** Workers whose control plane serves: the ones asked for their metrics. */
  const serving = new Set<Worker>();
  let stopping = false;
  let collects = 0;

  const collect = (worker: Worker) =>
    new Promise<readonly object[]>((resolve) => {
      const id = ++collects;
      const listen = (message: unknown) => {
        const reply = replyTo(message, 'metrics:collected', id);
        if (reply === undefined) return;
        clearTimeout(timer);
        worker.off('message', listen);
        resolve(reply.metrics);
      };
      // A worker that does not answer in time (busy, or dying) adds nothing to this scrape.
      const timer = setTimeout(() => {
        worker.off('message', listen);
        resolve([]);
      }, METRICS_TIMEOUT);
      worker.on('message', listen);
      worker.send({ type: 'metrics:collect', id } satisfies MetricsMessage);
    });
  const gather = (asker: Worker, id: number) => {
    Promise.all([...serving].filter((worker) => worker.isConnected()).map(collect))
      .then(aggregateMetrics)
      .then(
        (text) => asker.isConnected() && asker.send({ type: 'metrics:gathered', id, text } satisfies MetricsMessage),
        (error: unknown) => log.error({ err: error }, "adding up the workers' metrics failed"),
      );
  };
  const fork = (index: number): Worker => {
    const worker = cluster.fork({ [WORKER_INDEX]: String(index) });
    workers.set(index, worker);
    worker.on('message', (message: Partial<MetricsMessage> | undefined) => {
      if (message?.type === 'metrics:gather' && message.id !== undefined) gather(worker, message.id);
    });
    worker.once('exit', () => serving.delete(worker));
    log.info({ index, pid: worker.process.pid }, 'worker forked');
    return worker;
  };
  const started = (worker: Worker) =>
    new Promise<WorkerStarted>((resolve, reject) => {
      const onMessage = (message: unknown) => {
        if ((message as Partial<WorkerStarted>)?.type !== 'started') return;
        worker.off('exit', onExit);
        worker.off('message', onMessage);
        serving.add(worker);
        resolve(message as WorkerStarted);
      };
      const onExit = (code: number | null, signal: string | null) => {
        worker.off('message', onMessage);
        reject(new WorkerStartFailedError(indexOf(worker), signal ?? `code ${code}`));
      };
      worker.on('message', onMessage);
      worker.once('exit', onExit);
    });
  const indexOf = (worker: Worker) => [...workers].find(([, each]) => each === worker)?.[0] ?? 0;
  const stopAll = () => {
    stopping = true;
    for (const worker of workers.values()) if (worker.isConnected()) worker.send({ type: 'stop' } satisfies StopMessage);
  };
  const allExited = () => Promise.all([...workers.values()].map((worker) => (worker.isDead() ? undefined : new Promise((resolve) => worker.once('exit', resolve)))));

  let reports: WorkerStarted[];
  try {
    reports = await Promise.all(Array.from({ length: count }, (_, at) => started(fork(at + 1))));
  } catch (error) {
    stopAll();
    await allExited();
    throw error;
  }
  log.info({ workers: reports.map(({ instance }, at) => ({ index: at + 1, instance, pid: workers.get(at + 1)!.process.pid })), xds: reports[0]!.xds, api: reports[0]!.api }, 'chancery workers started');

  // A worker that dies is started again; its nodes' connections ended with it, so they
  // reconnect, to the others or to it, and are served from the store again (I2).
  const restart = (index: number, delay: number) => {
    setTimeout(() => {
      if (stopping) return;
      const worker = fork(index);
      started(worker).then(
        ({ instance }) => {
          log.info({ index, instance, pid: worker.process.pid }, 'worker started again');
          watch(index, worker, RESTART_DELAY);
        },
        () => restart(index, Math.min(delay * 2, MAX_RESTART_DELAY)),
      );
    }, delay).unref();
  };
  const watch = (index: number, worker: Worker, delay: number) => {
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      log.error({ index, pid: worker.process.pid, code, signal, restartInMs: delay }, 'worker exited; starting another in its place');
      restart(index, delay);
    });
  };
  for (const [index, worker] of workers) watch(index, worker, RESTART_DELAY);

  const signal = await stopRequested();
  log.info({ signal }, 'stopping the workers');
  stopAll();
  await allExited();
}
