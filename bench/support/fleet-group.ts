import type { ChangeResult, ConnectArgs, ConnectResult, FailoverResult, FleetApi } from '../fleet.js';
import { summed } from './traffic.js';
import { ChildLink, type ForkOptions } from './child-link.js';

/**
 * A fleet spread over several processes (bench/fleet.ts each), driven as one: `connect` gives
 * each process a contiguous share of the nodes, every other command goes to all of them, and
 * their answers are merged in node order. One process's event loop could not open 10,000 HTTP/2
 * connections and answer their responses as fast as the server sends them.
 */
export class FleetGroup {
  readonly #links: readonly ChildLink<FleetApi>[];

  private constructor(links: readonly ChildLink<FleetApi>[]) {
    this.#links = links;
  }

  static fork(name: string, processes: number, options: ForkOptions = {}): FleetGroup {
    return new FleetGroup(Array.from({ length: processes }, (_, index) => ChildLink.fork<FleetApi>(`${name} ${index + 1}/${processes}`, 'fleet.ts', options)));
  }

  get processes(): number {
    return this.#links.length;
  }

  async request<K extends keyof FleetApi & string>(name: K, args: FleetApi[K]['args'], timeoutMs: number): Promise<FleetApi[K]['result']> {
    switch (name) {
      case 'connect':
        return (await this.#connect(args as ConnectArgs, timeoutMs)) as FleetApi[K]['result'];
      case 'awaitChange': {
        const results = (await this.#all(name, args, timeoutMs)) as ChangeResult[];
        return { acked: concatenated(results.map((result) => result.acked)), traffic: summed(results.map((result) => result.traffic)) } as FleetApi[K]['result'];
      }
      case 'awaitFailover':
        return merged((await this.#all(name, args, timeoutMs)) as FailoverResult[]) as FleetApi[K]['result'];
      case 'progress': {
        const progress = (await this.#all(name, args, timeoutMs)) as FleetApi['progress']['result'][];
        return { complete: progress.reduce((total, one) => total + one.complete, 0) } as FleetApi[K]['result'];
      }
      case 'usage': {
        const usages = (await this.#all(name, args, timeoutMs)) as FleetApi['usage']['result'][];
        const sum = (of: (usage: FleetApi['usage']['result']) => number) => usages.reduce((total, usage) => total + of(usage), 0);
        return { cpuMs: sum((usage) => usage.cpuMs), heapUsed: sum((usage) => usage.heapUsed), rss: sum((usage) => usage.rss) } as FleetApi[K]['result'];
      }
      default:
        await this.#all(name, args, timeoutMs);
        return null as FleetApi[K]['result'];
    }
  }

  async exit(): Promise<void> {
    await Promise.all(this.#links.map((link) => link.exit()));
  }

  kill(): void {
    for (const link of this.#links) link.kill();
  }

  #all<K extends keyof FleetApi & string>(name: K, args: FleetApi[K]['args'], timeoutMs: number): Promise<FleetApi[K]['result'][]> {
    return Promise.all(this.#links.map((link) => link.request(name, args, timeoutMs)));
  }

  async #connect(args: ConnectArgs, timeoutMs: number): Promise<ConnectResult> {
    const { first, count } = args.nodes ?? { first: 0, count: args.shape.nodes };
    const shares = this.#links.map((link, index) => {
      const from = first + Math.floor((count * index) / this.#links.length);
      const to = first + Math.floor((count * (index + 1)) / this.#links.length);
      return { link, nodes: { first: from, count: to - from } };
    });
    const results = await Promise.all(shares.filter((share) => share.nodes.count > 0).map(({ link, nodes }) => link.request('connect', { ...args, nodes }, timeoutMs)));
    return {
      startedAt: Math.min(...results.map((result) => result.startedAt)),
      openedAt: Math.max(...results.map((result) => result.openedAt)),
      served: concatenated(results.map((result) => result.served)),
      complete: concatenated(results.map((result) => result.complete)),
      retried: results.reduce((total, result) => total + result.retried, 0),
      traffic: summed(results.map((result) => result.traffic)),
    };
  }
}

function concatenated(parts: readonly Float64Array[]): Float64Array {
  const out = new Float64Array(parts.reduce((total, part) => total + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Failover results in node order; each process's connection numbers follow the previous process's. */
function merged(results: readonly FailoverResult[]): FailoverResult {
  let offset = 0;
  const connections = results.map((result) => {
    const shifted = Float64Array.from(result.connection, (connection) => connection + offset);
    offset += result.connection.reduce((most, connection) => Math.max(most, connection + 1), 0);
    return shifted;
  });
  return {
    ended: concatenated(results.map((result) => result.ended)),
    reopened: concatenated(results.map((result) => result.reopened)),
    firstResponse: concatenated(results.map((result) => result.firstResponse)),
    served: concatenated(results.map((result) => result.served)),
    connection: Int32Array.from(concatenated(connections)),
    resent: { CDS: results.reduce((total, result) => total + result.resent.CDS, 0), LDS: results.reduce((total, result) => total + result.resent.LDS, 0) },
    traffic: summed(results.map((result) => result.traffic)),
  };
}
