import type { XdsMode } from '../../../src/mesh/index.js';
import { runCli } from '../../cli/cli-harness.js';
import { EnvoyProcess } from '../envoy.js';
import { startHarness, type Harness } from '../harness.js';
import { HttpClient, startHttpBackend, type HttpBackend } from '../http-backend.js';
import { perTest } from '../per-test.js';
import { freePort } from '../ports.js';
import { Traffic } from '../traffic.js';
import { putDataplane, deleteDataplane } from './dataplanes.js';
import { SERVICE, type RealBackend, type RealClient, type RealClientKind, type RealMesh, type WipeWatch } from './real-client.js';

/** The xDS variants real Envoy is tested over; every Envoy test runs once per mode. */
export const XDS_MODES: readonly XdsMode[] = ['sotw', 'delta'];

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
  /** The listeners it holds once configured. */
  readonly listeners: number;
}

export interface Backend extends Sidecar, RealBackend {
  readonly app: HttpBackend;
}

export interface Client extends Sidecar, RealClient {
  /** The outbound listener's port: requests sent here go to the service. */
  readonly port: number;
  /** Calls through the outbound listener, each on a new connection. */
  readonly traffic: Traffic;
}

/** Envoy's own proof that it never dropped or refused configuration: the counters the seed scenario watches. */
const WIPE_COUNTERS = [
  'listener_manager.listener_removed',
  'cluster_manager.cluster_removed',
  'listener_manager.lds.update_rejected',
  'cluster_manager.cds.update_rejected',
] as const;

/** The gauge a wipe would lower for a moment: the listeners an Envoy holds active. */
const ACTIVE_LISTENERS = 'listener_manager.total_listeners_active';

/**
 * Sidecars of mesh `default` against one Chancery: `api` is its HTTP API (`host:port`), where
 * Dataplanes are written and bootstraps read; `xds` is where the Envoys dial, Chancery itself
 * or a balancer in front of it.
 */
export class SidecarMesh implements RealMesh {
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
    return {
      ...sidecar,
      app,
      get served() {
        return app.served;
      },
    };
  }

  /** A client whose Envoy has one outbound to `service`; resolves once the Envoy holds its listener. */
  async addClient(name: string, service = SERVICE): Promise<Client> {
    const port = await freePort();
    const dataplane: DataplaneSpec = { type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1', outbound: [{ port, service }] } };
    const sidecar = await this.start(dataplane, 1);
    return { ...sidecar, port, traffic: new Traffic(new HttpClient(port)) };
  }

  /** Writes a Dataplane through the API, failing with the API's answer if it is refused. */
  put(dataplane: DataplaneSpec): Promise<void> {
    return putDataplane(this.api, dataplane);
  }

  async delete(name: string): Promise<void> {
    await deleteDataplane(this.api, name);
    this.#deleted.add(name);
  }

  /** The sidecars whose Dataplanes still exist: the ones Chancery serves. */
  get live(): readonly Sidecar[] {
    return this.sidecars.filter(({ name }) => !this.#deleted.has(name));
  }

  get served(): readonly string[] {
    return this.live.map(({ node }) => node);
  }

  /** The connections each Envoy opened to its xDS cluster: one ADS stream each. */
  async adsStreams(): Promise<Record<string, number>> {
    const streams: Record<string, number> = {};
    for (const { node, envoy } of this.sidecars) streams[node] = await envoy.stat('cluster.chancery-xds.upstream_cx_total');
    return streams;
  }

  /**
   * Samples the active listeners of every Envoy running now until `end`, and then reads the
   * wipe counters of every Envoy: a listener missing for a moment, or anything removed or
   * refused, is a sign.
   */
  watch(): WipeWatch {
    const watched = [...this.sidecars];
    let watching = true;
    const lowest = new Map<Sidecar, number>();
    const sampling = (async () => {
      while (watching) {
        for (const sidecar of watched) {
          const value = await sidecar.envoy.stat(ACTIVE_LISTENERS);
          lowest.set(sidecar, Math.min(lowest.get(sidecar) ?? value, value));
        }
      }
    })();
    return {
      end: async () => {
        watching = false;
        await sampling;
        const signs: string[] = [];
        for (const sidecar of watched) {
          const low = lowest.get(sidecar)!;
          if (low < sidecar.listeners) signs.push(`${sidecar.node}: ${low} active listeners at one moment, of ${sidecar.listeners}`);
        }
        for (const { node, envoy } of this.sidecars) {
          const stats = await envoy.stats();
          for (const counter of WIPE_COUNTERS) if ((stats.get(counter) ?? 0) > 0) signs.push(`${node}: ${counter} ${stats.get(counter)}`);
        }
        return signs;
      },
    };
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
    const sidecar: Sidecar = { name: dataplane.name, node, envoy, dataplane, listeners };
    this.sidecars.push(sidecar);
    await envoy.waitFor(`${listeners} active listener(s)`, async () => (await envoy.stat(ACTIVE_LISTENERS)) >= listeners);
    // The stream is the protocol the bootstrap asked for, as Chancery sees it (when this
    // instance serves it: behind a balancer, another may).
    const answer = await fetch(`http://${this.api}/sessions/${node}`);
    const view = (await answer.json()) as { stream?: { protocol?: string } };
    if (answer.status === 200 && view.stream?.protocol !== this.mode) throw new Error(`${node} speaks ${view.stream?.protocol ?? 'nothing'}, not ${this.mode}`);
    return sidecar;
  }
}

/** Real Envoy sidecars over `mode`: HTTP apps behind inbound listeners, a client calling through its outbound. */
export function envoyClients(mode: XdsMode): RealClientKind {
  return { name: `Envoy over ${mode}`, protocol: mode, deploy: (api, xds) => new SidecarMesh(api, xds, mode) };
}

/**
 * Registers hooks of a test file: before each test a Chancery (`startHarness`) and a
 * `SidecarMesh` over `mode` against it, stopped after the test.
 */
export function sidecarsEach(mode: XdsMode): { readonly harness: Harness; readonly mesh: SidecarMesh } {
  return perTest(
    async () => {
      const harness = await startHarness();
      return { harness, mesh: new SidecarMesh(harness.api, harness.xds, mode) };
    },
    async ({ harness, mesh }) => {
      await mesh.stop();
      await harness.stop();
    },
  );
}
