import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { budget } from './budget.js';
import { installedTool } from './installed-tool.js';
import { pause } from './traffic.js';

/** How a developer gets the Envoy these tests run: the README says the same. */
export const ENVOY_INSTALL = 'npm run envoy:install';

/**
 * The real Envoy binary: `ENVOY_BIN`, else the one `npm run envoy:install` put in .cache/envoy,
 * else `envoy` on PATH. Throws, naming the install command, when there is none.
 */
export function envoyBinary(): string {
  return installedTool({ what: 'a real Envoy', env: 'ENVOY_BIN', installed: '.cache/envoy/envoy', onPath: 'envoy', install: ENVOY_INSTALL });
}

/** One counter or gauge of Envoy's admin `/stats`. */
export type Stats = ReadonlyMap<string, number>;

/** What the tests read of `/config_dump?include_eds`: each dynamic resource with the version it came with. */
export interface DumpedResource {
  readonly name: string;
  readonly version: string;
  /** The resource as Envoy holds it, in proto3 JSON. */
  readonly resource: Record<string, unknown>;
}

export interface ConfigDump {
  readonly listeners: readonly DumpedResource[];
  readonly clusters: readonly DumpedResource[];
  readonly endpoints: readonly DumpedResource[];
}

const running = new Set<EnvoyProcess>();

/** A real Envoy process, started from a bootstrap, with its admin API on a port the OS chose. */
export class EnvoyProcess {
  #output: string[] = [];

  private constructor(
    readonly name: string,
    readonly admin: string,
    readonly child: ChildProcess,
    readonly exited: Promise<number | null>,
    output: string[],
    readonly dir: string,
  ) {
    this.#output = output;
  }

  /**
   * Starts Envoy on `bootstrap` (YAML, as `chancery bootstrap envoy --admin-port 0` prints it)
   * with one worker thread, and resolves once its admin listener is up.
   */
  static async start(name: string, bootstrap: string): Promise<EnvoyProcess> {
    const dir = mkdtempSync(path.join(tmpdir(), `chancery-envoy-${name}-`));
    const config = path.join(dir, 'bootstrap.yaml');
    const adminPath = path.join(dir, 'admin-address');
    writeFileSync(config, bootstrap);
    const child = spawn(
      envoyBinary(),
      ['-c', config, '--concurrency', '1', '--disable-hot-restart', '--admin-address-path', adminPath, '--log-level', 'warn', '--drain-time-s', '1'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const output: string[] = [];
    const keep = (chunk: Buffer) => {
      output.push(...chunk.toString('utf8').split('\n').filter((line) => line !== ''));
      if (output.length > 400) output.splice(0, output.length - 400);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    let exitCode: number | null | undefined;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve((exitCode = code))));
    // Envoy writes the admin address once its admin listener is bound.
    const deadline = Date.now() + budget(15_000);
    for (;;) {
      if (exitCode !== undefined) throw new Error(`Envoy ${name} exited (${exitCode}) before its admin listener was up:\n${output.join('\n')}`);
      const address = readIfPresent(adminPath);
      if (address !== undefined && address !== '') {
        const envoy = new EnvoyProcess(name, `http://${address}`, child, exited, output, dir);
        running.add(envoy);
        return envoy;
      }
      if (Date.now() > deadline) throw new Error(`Envoy ${name} wrote no admin address within ${budget(15_000)} ms:\n${output.join('\n')}`);
      await pause(50);
    }
  }

  /** The last lines Envoy logged, for failure messages. */
  output(): string {
    return this.#output.join('\n');
  }

  /** Every counter and gauge of `/stats` (histograms left out). */
  async stats(): Promise<Stats> {
    const text = await this.#get('/stats');
    const stats = new Map<string, number>();
    for (const line of text.split('\n')) {
      const match = /^([^:]+): (\d+)$/.exec(line);
      if (match) stats.set(match[1]!, Number(match[2]));
    }
    return stats;
  }

  /** One stat; 0 when Envoy has not created it (yet). */
  async stat(name: string): Promise<number> {
    return (await this.stats()).get(name) ?? 0;
  }

  /** The dynamic listeners (active), clusters (active) and endpoints Envoy holds, with their versions. */
  async configDump(): Promise<ConfigDump> {
    const dump = JSON.parse(await this.#get('/config_dump?include_eds')) as { configs: Array<Record<string, any>> };
    const of = (type: string) => dump.configs.find((config) => config['@type'] === `type.googleapis.com/envoy.admin.v3.${type}`) ?? {};
    const listeners = (of('ListenersConfigDump').dynamic_listeners ?? [])
      .filter((entry: any) => entry.active_state !== undefined)
      .map((entry: any) => dumped(entry.name, entry.active_state.version_info, entry.active_state.listener));
    const clusters = (of('ClustersConfigDump').dynamic_active_clusters ?? []).map((entry: any) =>
      dumped(entry.cluster.name, entry.version_info, entry.cluster),
    );
    const endpoints = (of('EndpointsConfigDump').dynamic_endpoint_configs ?? []).map((entry: any) =>
      dumped(entry.endpoint_config.cluster_name, entry.version_info, entry.endpoint_config),
    );
    return { listeners, clusters, endpoints };
  }

  /** Re-checks `condition` every 50 ms until it holds; fails after `timeoutMs` naming `what`, with Envoy's log. */
  async waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = budget(20_000)): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`Envoy ${this.name}: no ${what} within ${timeoutMs} ms; its log ends:\n${this.output()}`);
      await pause(50);
    }
  }

  /** Stops Envoy (SIGTERM, SIGKILL after 5 s) and removes its files. */
  async stop(): Promise<void> {
    running.delete(this);
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const killer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
      await this.exited;
      clearTimeout(killer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  async #get(route: string): Promise<string> {
    const response = await fetch(`${this.admin}${route}`, { signal: AbortSignal.timeout(budget(5_000)) });
    if (!response.ok) throw new Error(`Envoy ${this.name} admin ${route} answered ${response.status}`);
    return response.text();
  }
}

/** Stops every Envoy still running: for `afterEach`. */
export async function stopAllEnvoys(): Promise<void> {
  await Promise.all([...running].map((envoy) => envoy.stop()));
}

function dumped(name: string, version: string, resource: Record<string, unknown>): DumpedResource {
  return { name, version, resource };
}

function readIfPresent(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}
