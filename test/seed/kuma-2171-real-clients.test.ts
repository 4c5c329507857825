import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, type ChanceryProcess, chanceryOnPostgres, killAll, startChancery } from '../e2e/chancery-process.js';
import { budget } from '../support/budget.js';
import { envoyBinary } from '../support/envoy.js';
import { startHarness } from '../support/harness.js';
import { testPython } from '../support/python.js';
import { REAL_CLIENTS, reaches, type RealClient, type RealClientKind, type RealMesh } from '../support/real-clients/index.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually } from '../support/traffic.js';

/**
 * kuma#2171 with the victims it had: real dataplanes, each kind in turn (Envoy over SotW and
 * Delta, grpc-js-xds, gRPC's C-core). While calls flow from a client to backends, the control
 * plane is cut off, restarted and killed under them, and each client's own account (Envoy's
 * counters, the gRPC clients' xDS traces) says whether it was ever told to drop what it had.
 * Answering a reconnect with an empty or placeholder configuration makes Envoy remove its
 * listeners and clusters, and a gRPC client conclude its listener does not exist and fail its
 * calls: the signs and the failed calls would show it.
 */

// Fails the file at once, naming the install command, on a machine without Envoy or Python.
envoyBinary();
testPython();

/** Cuts in the reconnect scenario: each once every node is served again on a new stream. */
const CUTS = 5;

const { newDatabase, cleanups } = chanceryOnPostgres();

/** A balancer in front of `targets` through which every xDS client reaches Chancery; tests cut it and move it. */
async function balancerFor(targets: readonly string[]): Promise<TcpProxy> {
  const balancer = await startTcpProxy(targets);
  cleanups.push(() => balancer.close());
  return balancer;
}

/** Two backends and a client of `kind`, dialing Chancery through `balancer`, the client reaching both. */
async function deploy(kind: RealClientKind, api: string, balancer: TcpProxy): Promise<{ mesh: RealMesh; client: RealClient }> {
  const mesh = kind.deploy(api, balancer.address);
  cleanups.push(() => mesh.stop());
  await mesh.addBackend('backend-1');
  await mesh.addBackend('backend-2');
  const client = await mesh.addClient('web-1');
  await reaches(client, ['backend-1', 'backend-2']);
  return { mesh, client };
}

/**
 * Runs `disruption` while the client makes calls and the mesh watches its xDS clients, then
 * checks what the seed scenario promises: no call failed, and no client was told to drop
 * anything, by its own account.
 */
async function throughout(mesh: RealMesh, client: RealClient, disruption: () => Promise<void>): Promise<void> {
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const flowing = client.traffic.during(stopped);
  const watch = mesh.watch();
  try {
    await disruption();
  } finally {
    stop();
    await Promise.allSettled([flowing]);
  }
  expect(client.traffic.failures).toEqual([]);
  expect(await watch.end()).toEqual([]);
}

/** The stream serving `node` on the instance whose API is `api`, if it is `serving` there. */
async function servingStream(api: string, node: string): Promise<string | undefined> {
  const { body } = await call(`http://${api}/sessions/${node}`, 'GET');
  return body?.state === 'serving' ? String(body.stream.id) : undefined;
}

/** Whether every node the mesh runs is `serving` on the instance whose API is `api`, none on a stream in `old`. */
async function allServedBy(api: string, mesh: RealMesh, old: ReadonlySet<string> = new Set()): Promise<boolean> {
  for (const node of mesh.served) {
    const stream = await servingStream(api, node);
    if (stream === undefined || old.has(stream)) return false;
  }
  return true;
}

/**
 * Over Delta, each of `moved` was resumed by the instance at `api` from what its client held:
 * its stream opened naming resources in initial_resource_versions (the history's `holds`), and
 * the instance sent none of its clusters or listeners again, as it held them all at the
 * current versions (rule 6; the content hashes are the same on every instance, I6).
 */
async function expectResumedFromWhatItHeld(api: string, moved: readonly string[]): Promise<void> {
  for (const node of moved) {
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

/** Waits as long as a client's reconnect may take: its own backoff, grown by earlier cuts (grpc-js-xds never resets it). */
const RECONNECT = { attempts: 1_200, every: 50 };

describe.each(REAL_CLIENTS)('kuma#2171 with its real victims: $name', { timeout: budget(120_000) }, (kind) => {
  it('cut off from Chancery again and again while backends come and go: no call fails, nothing is removed', async () => {
    const harness = await startHarness({ evictionGrace: 30_000 });
    cleanups.push(() => harness.stop());
    const balancer = await balancerFor([harness.xds]);
    const { mesh, client } = await deploy(kind, harness.api, balancer);
    const streamsBefore = await mesh.adsStreams();

    await throughout(mesh, client, async () => {
      for (let cut = 1; cut <= CUTS; cut++) {
        const old = new Set<string>();
        for (const node of mesh.served) old.add((await servingStream(harness.api, node))!);
        balancer.cutAll();
        if (cut === 2) await mesh.addBackend('backend-3');
        if (cut === 4) await mesh.delete('backend-1');
        await eventually(`every node served again on a new stream after cut ${cut}`, () => allServedBy(harness.api, mesh, old), RECONNECT);
      }
      await reaches(client, ['backend-2', 'backend-3']);
    });

    // The client came back after every cut, by its own account.
    const streamsAfter = await mesh.adsStreams();
    expect(streamsAfter[client.node]! - streamsBefore[client.node]!, `ADS streams ${client.node} opened`).toBeGreaterThanOrEqual(CUTS);
    const recent = client.traffic.servedBy.slice(-30);
    expect(recent).not.toContain('backend-1');
  });

  it('while Chancery restarts on its PGlite store: no call fails, nothing is removed', async () => {
    const data = mkdtempSync(path.join(tmpdir(), 'chancery-real-clients-pglite-'));
    // Its Chancery exits first: one still writing there makes removing the directory fail.
    cleanups.push(async () => {
      await killAll();
      rmSync(data, { recursive: true, force: true });
    });
    const store = `pglite:${data}`;
    const first = await run(store);
    const balancer = await balancerFor([first.xds]);
    const { mesh, client } = await deploy(kind, apiOf(first), balancer);

    await throughout(mesh, client, async () => {
      expect(await first.stop()).toBe(0);
      const second = await run(store);
      balancer.setTargets([second.xds]);
      mesh.api = apiOf(second);
      await eventually('every node served by the restarted Chancery', () => allServedBy(mesh.api, mesh), RECONNECT);
      if (kind.protocol === 'delta') await expectResumedFromWhatItHeld(mesh.api, mesh.served);
      await mesh.addBackend('backend-3');
      await reaches(client, ['backend-1', 'backend-2', 'backend-3']);
    });
  });

  it('when the instance serving it, one of two on Postgres, is SIGKILLed: no call fails, nothing is removed', async () => {
    const database = await newDatabase();
    const instances = [await run(database, '--instance-id', 'instance-0'), await run(database, '--instance-id', 'instance-1')];
    const balancer = await balancerFor(instances.map((instance) => instance.xds));
    const { mesh, client } = await deploy(kind, apiOf(instances[0]!), balancer);
    const [a, b] = instances as [ChanceryProcess, ChanceryProcess];
    let victim: ChanceryProcess | undefined;
    await eventually('the client served by one of the instances', async () => {
      victim = (await servingStream(apiOf(a), client.node)) ? a : (await servingStream(apiOf(b), client.node)) ? b : undefined;
      return victim !== undefined;
    }, { attempts: 200, every: 50 });
    const survivor = victim === a ? b : a;
    const moved: string[] = [];
    for (const node of mesh.served) if (await servingStream(apiOf(victim!), node)) moved.push(node);

    await throughout(mesh, client, async () => {
      await victim!.kill();
      // What a balancer's health check does: stop sending connections to the dead instance.
      balancer.setTargets([survivor.xds]);
      mesh.api = apiOf(survivor);
      await eventually('every node served by the survivor', () => allServedBy(mesh.api, mesh), RECONNECT);
      if (kind.protocol === 'delta') await expectResumedFromWhatItHeld(mesh.api, moved);
      await mesh.addBackend('backend-3');
      await reaches(client, ['backend-1', 'backend-2', 'backend-3']);
    });
  });
});
