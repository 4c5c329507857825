import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from '../../cli/cli-harness.js';
import { startEchoBackend, type EchoBackend } from '../echo-backend.js';
import { backendDataplane, clientDataplane } from '../harness.js';
import { RPC_DEADLINE_MS, Traffic } from '../traffic.js';
import { deleteDataplane, putDataplane } from './dataplanes.js';
import { startEchoProcess, type EchoProcess, type ProxylessKind } from './echo-process.js';
import { SERVICE, type RealClient, type RealClientKind, type RealMesh, type WipeWatch } from './real-client.js';

interface ProxylessClient extends RealClient {
  readonly process: EchoProcess;
}

/**
 * Proxyless gRPC clients of one kind, each in a process of its own started from the bootstrap
 * `chancery bootstrap grpc` prints for its node, calling real grpc-js echo backends whose
 * Dataplanes name the ports they listen on. Only the clients speak xDS.
 */
export class ProxylessMesh implements RealMesh {
  readonly #backends: EchoBackend[] = [];
  readonly #clients: ProxylessClient[] = [];
  readonly #deleted = new Set<string>();
  readonly #dir = mkdtempSync(path.join(tmpdir(), 'chancery-proxyless-'));

  constructor(
    public api: string,
    readonly xds: string,
    readonly kind: ProxylessKind,
  ) {}

  async addBackend(name: string): Promise<EchoBackend> {
    const backend = await startEchoBackend(name);
    this.#backends.push(backend);
    await putDataplane(this.api, backendDataplane(name, backend.port, SERVICE));
    return backend;
  }

  /** A client process; resolves once it has made one RPC, which waits for its xDS client to be served (not counted in its traffic). */
  async addClient(name: string): Promise<RealClient> {
    const node = `default.${name}`;
    await putDataplane(this.api, clientDataplane(name));
    const bootstrap = path.join(this.#dir, `${name}.json`);
    const printed = await runCli(['bootstrap', 'grpc', '--node', node, '--xds', this.xds, '--api-address', this.api, '--output', bootstrap]);
    if (printed.code !== 0) throw new Error(`chancery bootstrap grpc --node ${node} exited ${printed.code}: ${printed.stderr}`);
    const process = startEchoProcess(this.kind, SERVICE, { GRPC_XDS_BOOTSTRAP: bootstrap });
    const client = { name, node, process, traffic: new Traffic(process) };
    this.#clients.push(client);
    await process.echo(RPC_DEADLINE_MS);
    return client;
  }

  async delete(name: string): Promise<void> {
    await deleteDataplane(this.api, name);
    this.#deleted.add(name);
  }

  get served(): readonly string[] {
    return this.#clients.filter(({ name }) => !this.#deleted.has(name)).map(({ node }) => node);
  }

  async adsStreams(): Promise<Record<string, number>> {
    return Object.fromEntries(this.#clients.map(({ node, process }) => [node, process.xds().streams]));
  }

  /** Each time a client concluded, by its own trace, that a resource it uses does not exist. */
  watch(): WipeWatch {
    return {
      end: async () => this.#clients.flatMap(({ node, process }) => process.xds().missing.map((line) => `${node}: ${line}`)),
    };
  }

  async stop(): Promise<void> {
    await Promise.all(this.#clients.map(({ process }) => process.stop()));
    await Promise.all(this.#backends.map((backend) => backend.stop()));
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** Proxyless gRPC clients of `kind`; they speak State of the World only. */
export function proxylessClients(kind: ProxylessKind): RealClientKind {
  return {
    name: kind === 'c-core' ? 'gRPC C-core (Python grpcio)' : 'grpc-js-xds',
    protocol: 'sotw',
    deploy: (api, xds) => new ProxylessMesh(api, xds, kind),
  };
}
