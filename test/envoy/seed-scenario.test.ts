import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, type ChanceryProcess, chanceryOnPostgres, killAll, startChancery } from '../e2e/chancery-process.js';
import { envoyBinary } from '../support/envoy.js';
import { startHarness } from '../support/harness.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually, pause } from '../support/traffic.js';
import { type Client, lowest, noWipes, reaches, type Sidecar, SidecarMesh, wipeCounters, XDS_MODES } from './sidecars.js';

/**
 * kuma#2171 with the victim it had: real Envoys. While requests flow from a client Envoy to
 * backend Envoys, the control plane is cut off, restarted and killed under them, and Envoy's
 * own counters say whether it was ever told to drop what it had. Answering a reconnect with
 * an empty or placeholder configuration makes Envoy remove its listeners and clusters, which
 * these counters and the failed requests would show.
 */

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

/** Each sidecar's configured listeners: a backend's inbound, the client's outbound. */
const LISTENERS_EACH = 1;

const { newDatabase, cleanups } = chanceryOnPostgres();

/** A balancer in front of `targets` through which every Envoy reaches Chancery; tests cut it and move it. */
async function balancerFor(targets: readonly string[]): Promise<TcpProxy> {
  const balancer = await startTcpProxy(targets);
  cleanups.push(() => balancer.close());
  return balancer;
}

/** Two backends and a client, each with its Envoy, dialing Chancery through `balancer`, the client reaching both. */
async function sidecars(api: string, balancer: TcpProxy, mode: (typeof XDS_MODES)[number]): Promise<{ mesh: SidecarMesh; client: Client }> {
  const mesh = new SidecarMesh(api, balancer.address, mode);
  cleanups.push(() => mesh.stop());
  await mesh.addBackend('backend-1');
  await mesh.addBackend('backend-2');
  const client = await mesh.addClient('web-1');
  await reaches(client, ['backend-1', 'backend-2']);
  return { mesh, client };
}

/**
 * Runs `disruption` while the client sends requests and the active listeners of every sidecar
 * running at its start are sampled, then checks what the seed scenario promises: no request
 * failed, no Envoy removed or refused anything, and none ever held fewer listeners than it was
 * configured with.
 */
async function throughout(mesh: SidecarMesh, client: Client, disruption: () => Promise<void>): Promise<void> {
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const flowing = client.traffic.during(stopped);
  const watched = [...mesh.sidecars];
  const lows = lowest(watched, 'listener_manager.total_listeners_active', stopped);
  try {
    await disruption();
  } finally {
    stop();
    await Promise.allSettled([flowing, lows]);
  }
  expect(client.traffic.failures).toEqual([]);
  expect(await wipeCounters(mesh.sidecars)).toEqual(noWipes(mesh.sidecars));
  expect(await lows).toEqual(Object.fromEntries(watched.map(({ name }) => [name, LISTENERS_EACH])));
}

/** Whether `node` is `serving` on the instance whose API is `api`. */
async function serving(api: string, node: string): Promise<boolean> {
  return (await call(`http://${api}/sessions/${node}`, 'GET')).body?.state === 'serving';
}

/** Whether every sidecar whose Dataplane exists is `serving` on the instance whose API is `api`. */
async function allServedBy(api: string, mesh: SidecarMesh): Promise<boolean> {
  for (const { node } of mesh.live) if (!(await serving(api, node))) return false;
  return true;
}

/**
 * Over Delta, each of `moved` was resumed by the instance at `api` from what its Envoy held:
 * its stream opened naming resources in initial_resource_versions (the history's `holds`), and
 * the instance sent none of its clusters or listeners again, as Envoy held them all at the
 * current versions (rule 6; the content hashes are the same on every instance, I6).
 */
async function expectResumedFromWhatItHeld(api: string, moved: readonly Sidecar[]): Promise<void> {
  for (const { node } of moved) {
    const { body: view } = await call(`http://${api}/sessions/${node}`, 'GET');
    expect(view.stream.protocol, node).toBe('delta');
    for (const type of ['CDS', 'LDS']) expect(view.types[type]?.sent?.resources, `${type} resources sent to ${node} after the move`).toBe(0);
    const { body: history } = await call(`http://${api}/sessions/${node}/history`, 'GET');
    const opened = (history.transitions as Array<{ event: string; detail?: Record<string, unknown> }>).filter((t) => t.event === 'stream.opened');
    expect(opened.at(-1)?.detail, `${node}'s last stream.opened`).toMatchObject({ protocol: 'delta', stream: view.stream.id });
    expect(opened.at(-1)?.detail?.['holds'], `resources ${node} said it held when its stream opened`).toBeGreaterThan(0);
  }
}

/** `chancery run` on `store`, its API address as `host:port`. */
async function run(store: string, ...args: string[]): Promise<ChanceryProcess> {
  return startChancery(['--store', store, '--drain-period', '0', ...args]);
}

const apiOf = (instance: ChanceryProcess) => instance.url.replace('http://', '');

describe.each(XDS_MODES)('kuma#2171 with its real victim, Envoy over %s', { timeout: 120_000 }, (mode) => {
  it('cut off from Chancery again and again while backends come and go: no request fails, nothing is removed', async () => {
    const harness = await startHarness({ evictionGrace: 30_000 });
    cleanups.push(() => harness.stop());
    const balancer = await balancerFor([harness.xds]);
    const { mesh, client } = await sidecars(harness.api, balancer, mode);

    await throughout(mesh, client, async () => {
      for (let cut = 1; cut <= 24; cut++) {
        await pause(300);
        balancer.cutAll();
        if (cut === 8) await mesh.addBackend('backend-3');
        if (cut === 16) await mesh.delete('backend-1');
      }
      await eventually('every sidecar served again after the last cut', () => allServedBy(harness.api, mesh), { attempts: 400, every: 50 });
      await reaches(client, ['backend-2', 'backend-3']);
    });

    // Every Envoy came back after cuts, many times over.
    for (const { name, envoy } of mesh.sidecars) {
      expect(await envoy.stat('cluster.chancery-xds.upstream_cx_total'), `${name}'s connections to Chancery`).toBeGreaterThan(5);
    }
    const recent = client.traffic.servedBy.slice(-30);
    expect(recent).not.toContain('backend-1');
  });

  it('while Chancery restarts on its PGlite store: no request fails, nothing is removed', async () => {
    const data = mkdtempSync(path.join(tmpdir(), 'chancery-envoy-pglite-'));
    // Its Chancery exits first: one still writing there makes removing the directory fail.
    cleanups.push(async () => {
      await killAll();
      rmSync(data, { recursive: true, force: true });
    });
    const store = `pglite:${data}`;
    const first = await run(store);
    const balancer = await balancerFor([first.xds]);
    const { mesh, client } = await sidecars(apiOf(first), balancer, mode);

    await throughout(mesh, client, async () => {
      expect(await first.stop()).toBe(0);
      const second = await run(store);
      balancer.setTargets([second.xds]);
      mesh.api = apiOf(second);
      await eventually('every sidecar served by the restarted Chancery', () => allServedBy(mesh.api, mesh), { attempts: 600, every: 50 });
      if (mode === 'delta') await expectResumedFromWhatItHeld(mesh.api, mesh.live);
      await mesh.addBackend('backend-3');
      await reaches(client, ['backend-1', 'backend-2', 'backend-3']);
    });
  });

  it('when the instance serving it, one of two on Postgres, is SIGKILLed: no request fails, nothing is removed', async () => {
    const database = await newDatabase();
    const instances = [await run(database, '--instance-id', 'instance-0'), await run(database, '--instance-id', 'instance-1')];
    const balancer = await balancerFor(instances.map((instance) => instance.xds));
    const { mesh, client } = await sidecars(apiOf(instances[0]!), balancer, mode);
    const [a, b] = instances as [ChanceryProcess, ChanceryProcess];
    let victim: ChanceryProcess | undefined;
    await eventually('the client served by one of the instances', async () => {
      victim = (await serving(apiOf(a), client.node)) ? a : (await serving(apiOf(b), client.node)) ? b : undefined;
      return victim !== undefined;
    }, { attempts: 200, every: 50 });
    const survivor = victim === a ? b : a;
    const moved: Sidecar[] = [];
    for (const sidecar of mesh.live) if (await serving(apiOf(victim!), sidecar.node)) moved.push(sidecar);

    await throughout(mesh, client, async () => {
      await victim!.kill();
      // What a balancer's health check does: stop sending connections to the dead instance.
      balancer.setTargets([survivor.xds]);
      mesh.api = apiOf(survivor);
      await eventually('every sidecar served by the survivor', () => allServedBy(mesh.api, mesh), { attempts: 600, every: 50 });
      if (mode === 'delta') await expectResumedFromWhatItHeld(mesh.api, moved);
      await mesh.addBackend('backend-3');
      await reaches(client, ['backend-1', 'backend-2', 'backend-3']);
    });
  });
});
