import cluster from 'node:cluster';
import { once } from 'node:events';
import type { MemorySample, UsageSample } from './process-probes.js';
import { ChildLink, monotonicMs } from './child-link.js';
import type { ServerApi } from '../server.js';

type StartArgs = ServerApi['start']['args'];

/**
 * The bench server as `chancery run --workers N` arranges it: N cluster workers, each a control
 * plane of its own (instance `<id>-<i>`) on the same xDS and API ports, accepting from the
 * shared sockets themselves (SCHED_NONE), sharing one Postgres. Each worker answers the same
 * commands as a single bench server; this end sends them on and adds up the answers.
 */
export class ServerWorkers {
  private constructor(readonly workers: readonly ChildLink<ServerApi>[]) {}

  /** Forks `count` workers of this script (the same flags), each announcing itself with `listening()`, and starts a control plane in each. */
  static async start(count: number, args: StartArgs, timeoutMs: number): Promise<{ group: ServerWorkers; started: ServerApi['start']['result'] }> {
    cluster.schedulingPolicy = cluster.SCHED_NONE;
    cluster.setupPrimary({ serialization: 'advanced' });
    const forked = Array.from({ length: count }, () => cluster.fork());
    // A cluster worker's channel is read from its start, so a command sent before it listens would be lost: it says when it does.
    await Promise.all(forked.map((worker) => once(worker, 'message')));
    const group = new ServerWorkers(forked.map((worker, at) => ChildLink.over<ServerApi>(`worker ${at + 1}`, worker.process)));
    const started = await group.each('start', (at) => ({ ...args, instanceId: `${args.instanceId ?? 'bench'}-${at + 1}` }), timeoutMs);
    return { group, started: { ...started[0]!, pid: process.pid } };
  }

  /** Sends `name` to every worker at once, with the arguments `argsOf` gives each. */
  each<K extends keyof ServerApi & string>(name: K, argsOf: (at: number) => ServerApi[K]['args'], timeoutMs: number): Promise<ServerApi[K]['result'][]> {
    return Promise.all(this.workers.map((worker, at) => worker.request(name, argsOf(at), timeoutMs)));
  }

  /** Sends `name` to the first worker: a write goes to the store every worker reads. */
  first<K extends keyof ServerApi & string>(name: K, args: ServerApi[K]['args'], timeoutMs: number): Promise<ServerApi[K]['result']> {
    return this.workers[0]!.request(name, args, timeoutMs);
  }

  /** Once every worker's sessions (or, with `afterFirst`, every worker's but the first's) have handled `revision`: the latest of their times. */
  async reached(revision: number, timeoutMs: number, { afterFirst = false } = {}): Promise<number> {
    const asked = afterFirst ? this.workers.slice(1) : this.workers;
    const answers = await Promise.all(asked.map((worker) => worker.request('reached', { revision, timeoutMs }, timeoutMs + 5_000)));
    return Math.max(...answers.map(({ at }) => at));
  }

  /** Every worker's memory, added up. */
  async memory(timeoutMs: number): Promise<MemorySample> {
    const samples = await this.each('memory', () => null, timeoutMs);
    const sum = (of: (sample: MemorySample) => number) => samples.reduce((total, sample) => total + of(sample), 0);
    return { heapUsed: sum((m) => m.heapUsed), heapTotal: sum((m) => m.heapTotal), external: sum((m) => m.external), arrayBuffers: sum((m) => m.arrayBuffers), rss: sum((m) => m.rss) };
  }

  /** CPU and memory added up over the workers and this process; the loop figures are the worst worker's. */
  async usage(own: UsageSample, timeoutMs: number): Promise<UsageSample> {
    const samples = [own, ...(await this.each('usage', () => null, timeoutMs))];
    const sum = (of: (sample: UsageSample) => number) => samples.reduce((total, sample) => total + of(sample), 0);
    const max = (of: (sample: UsageSample) => number) => Math.max(...samples.map(of));
    return { at: monotonicMs(), cpuMs: sum((u) => u.cpuMs), loopStallMaxMs: max((u) => u.loopStallMaxMs), loopLagP99Ms: max((u) => u.loopLagP99Ms), rss: sum((u) => u.rss), maxRss: sum((u) => u.maxRss) };
  }

  async stop(timeoutMs: number): Promise<void> {
    await this.each('stop', () => null, timeoutMs);
    await Promise.all(this.workers.map((worker) => worker.exit()));
  }
}

/** In a worker, once it serves commands: the primary sends none before. */
export function listening(): void {
  process.send?.({ listening: true });
}
