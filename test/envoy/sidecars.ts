import { createServer, type AddressInfo } from 'node:net';
import type { XdsMode } from '../../src/mesh/index.js';
import { runCli } from '../cli/cli-harness.js';
import { EnvoyProcess } from '../support/envoy.js';
import { HttpClient, startHttpBackend, type HttpBackend } from '../support/http-backend.js';
import { Traffic } from '../support/traffic.js';

/** The xDS variants real Envoy is tested over; every Envoy test runs once per mode. */
export const XDS_MODES: readonly XdsMode[] = ['sotw', 'delta'];

/** The service every backend sidecar serves and the client sidecar calls. */
export const SERVICE = 'echo';

/** A port free on 127.0.0.1 now: a Dataplane's listener needs a real port before its Envoy binds it. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A Dataplane, as the API takes it. */
export interface DataplaneSpec {
  readonly type: 'Dataplane';
  readonly mesh: string;
  readonly name: string;
  readonly networking: {
    readonly address: string;
    readonly inbound?: readonly { port: number; servicePort?: number; tags: Record<string, string> }[];
    readonly outbound?: readonly { port: number; service: string }[];
  };
}

/** An application with its sidecar Envoy, started from `chancery bootstrap envoy`. */
export interface Sidecar {
  readonly name: string;
  readonly node: string;
  readonly envoy: EnvoyProcess;
  readonly dataplane: DataplaneSpec;
}

export interface Backend extends Sidecar {
  readonly app: HttpBackend;
}

export interface Client extends Sidecar {
  /** The outbound listener's port: requests sent here go to the service. */
  readonly port: number;
  /** Calls through the outbound listener, each on a new connection. */
  readonly traffic: Traffic;
}

/**
 * Sidecars of mesh `default` against one Chancery: `api` is its HTTP API (`host:port`), where
 * Dataplanes are written and bootstraps read; `xds` is where the Envoys dial, Chancery itself
 * or a balancer in front of it.
 */
export class SidecarMesh {
  /** Every sidecar started, deleted ones included (their Envoys keep running). */
  readonly sidecars: Sidecar[] = [];
  readonly #deleted = new Set<string>();
  readonly #apps: HttpBackend[] = [];

  constructor(
    /** Where Dataplanes are written and bootstraps read; a test moves it when Chancery restarts elsewhere. */
    public api: string,
    readonly xds: string,
    readonly mode: XdsMode,
  ) {}

  /** An HTTP app serving `service` behind an Envoy inbound; resolves once the Envoy holds its listener. */
  async addBackend(name: string, service = SERVICE): Promise<Backend> {
    const app = await startHttpBackend(name);
    this.#apps.push(app);
    const dataplane: DataplaneSpec = {
      type: 'Dataplane',
      mesh: 'default',
      name,
      networking: { address: '127.0.0.1', inbound: [{ port: await freePort(), servicePort: app.port, tags: { service } }] },
    };
    const sidecar = await this.start(dataplane, 1);
    return { ...sidecar, app };
  }

  /** A client whose Envoy has one outbound to `service`; resolves once the Envoy holds its listener. */
  async addClient(name: string, service = SERVICE): Promise<Client> {
    const port = await freePort();
    const dataplane: DataplaneSpec = { type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1', outbound: [{ port, service }] } };
    const sidecar = await this.start(dataplane, 1);
    return { ...sidecar, port, traffic: new Traffic(new HttpClient(port)) };
  }

  /** Writes a Dataplane through the API, failing with the API's answer if it is refused. */
  async put(dataplane: DataplaneSpec): Promise<void> {
    const response = await fetch(`http://${this.api}/meshes/${dataplane.mesh}/dataplanes/${dataplane.name}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(dataplane),
    });
    if (!response.ok) throw new Error(`PUT Dataplane ${dataplane.name} answered ${response.status}: ${await response.text()}`);
  }

  async delete(name: string): Promise<void> {
    const response = await fetch(`http://${this.api}/meshes/default/dataplanes/${name}`, { method: 'DELETE' });
    if (!response.ok) throw new Error(`DELETE Dataplane ${name} answered ${response.status}: ${await response.text()}`);
    this.#deleted.add(name);
  }

  /** The sidecars whose Dataplanes still exist: the ones Chancery serves. */
  get live(): readonly Sidecar[] {
    return this.sidecars.filter(({ name }) => !this.#deleted.has(name));
  }

  /** The bootstrap `chancery bootstrap envoy` prints for `node`, with the admin port left to the OS. */
  async bootstrap(node: string): Promise<string> {
    const argv = ['bootstrap', 'envoy', '--node', node, '--xds', this.xds, '--admin-port', '0', '--api-address', this.api];
    const result = await runCli(this.mode === 'delta' ? [...argv, '--delta'] : argv);
    if (result.code !== 0) throw new Error(`chancery bootstrap envoy --node ${node} exited ${result.code}: ${result.stderr}`);
    return result.stdout;
  }

  async stop(): Promise<void> {
    await Promise.all(this.sidecars.map((sidecar) => sidecar.envoy.stop()));
    await Promise.all(this.#apps.map((app) => app.stop()));
  }

  /** Writes `dataplane` and starts its Envoy; resolves once the Envoy holds `listeners` active listeners. */
  async start(dataplane: DataplaneSpec, listeners: number): Promise<Sidecar> {
    await this.put(dataplane);
    const node = `${dataplane.mesh}.${dataplane.name}`;
    const envoy = await EnvoyProcess.start(dataplane.name, await this.bootstrap(node));
    const sidecar: Sidecar = { name: dataplane.name, node, envoy, dataplane };
    this.sidecars.push(sidecar);
    await envoy.waitFor(`${listeners} active listener(s)`, async () => (await envoy.stat('listener_manager.total_listeners_active')) >= listeners);
    // The stream is the protocol the bootstrap asked for, as Chancery sees it (when this
    // instance serves it: behind a balancer, another may).
    const answer = await fetch(`http://${this.api}/sessions/${node}`);
    const view = (await answer.json()) as { stream?: { protocol?: string } };
    if (answer.status === 200 && view.stream?.protocol !== this.mode) throw new Error(`${node} speaks ${view.stream?.protocol ?? 'nothing'}, not ${this.mode}`);
    return sidecar;
  }
}

/** Envoy's own proof that it never dropped or refused configuration: the counters the seed scenario watches. */
export const WIPE_COUNTERS = [
  'listener_manager.listener_removed',
  'cluster_manager.cluster_removed',
  'listener_manager.lds.update_rejected',
  'cluster_manager.cds.update_rejected',
] as const;

/** The wipe counters of each sidecar, by sidecar name: all zero when nothing was wiped. */
export async function wipeCounters(sidecars: readonly Sidecar[]): Promise<Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, number>> = {};
  for (const { name, envoy } of sidecars) {
    const stats = await envoy.stats();
    out[name] = Object.fromEntries(WIPE_COUNTERS.map((counter) => [counter, stats.get(counter) ?? 0]));
  }
  return out;
}

/** The same shape with every counter at zero: what `wipeCounters` must equal. */
export function noWipes(sidecars: readonly Sidecar[]): Record<string, Record<string, number>> {
  return Object.fromEntries(sidecars.map(({ name }) => [name, Object.fromEntries(WIPE_COUNTERS.map((counter) => [counter, 0]))]));
}

/** Makes calls until `name` has answered one, or fails naming what was seen. */
export function reaches(client: Client, names: readonly string[]): Promise<void> {
  return client.traffic.until(`answer from each of ${names.join(', ')}`, (recent) => names.every((name) => recent.includes(name)), {
    window: names.length * 6,
    attempts: 2_000,
  });
}

/**
 * Samples `stat` of each sidecar every few ms until `stop` resolves, and resolves with the
 * lowest value each had: a gauge that dipped for a moment shows here.
 */
export async function lowest(sidecars: readonly Sidecar[], stat: string, stop: Promise<unknown>): Promise<Record<string, number>> {
  let stopped = false;
  void stop.then(() => (stopped = true));
  const low: Record<string, number> = {};
  do {
    for (const { name, envoy } of sidecars) {
      const value = await envoy.stat(stat);
      low[name] = Math.min(low[name] ?? value, value);
    }
  } while (!stopped);
  return low;
}
