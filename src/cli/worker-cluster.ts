import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { ChanceryError } from '../chancery-error.js';

/** The variable a worker's index (1…N) reaches it by; absent in a process started by hand. */
const WORKER_INDEX = 'CHANCERY_WORKER_INDEX';

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
  let stopping = false;

  const fork = (index: number): Worker => {
    const worker = cluster.fork({ [WORKER_INDEX]: String(index) });
    workers.set(index, worker);
    log.info({ index, pid: worker.process.pid }, 'worker forked');
    return worker;
  };
  const started = (worker: Worker) =>
    new Promise<WorkerStarted>((resolve, reject) => {
      const onMessage = (message: unknown) => {
        if ((message as Partial<WorkerStarted>)?.type !== 'started') return;
        worker.off('exit', onExit);
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
