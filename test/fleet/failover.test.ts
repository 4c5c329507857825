import { describe, expect, it } from 'vitest';
import { CLUSTER, ENDPOINT, LISTENER, PROTOCOLS, type Protocol } from '../../src/xds/index.js';
import { call, type ChanceryProcess, chanceryOnPostgres, startChancery } from '../e2e/chancery-process.js';
import { budget } from '../support/budget.js';
import { testPython } from '../support/python.js';
import { PROXYLESS_KINDS } from '../support/real-clients/echo-process.js';
import type { RealBackend, RealClient, RealClientKind, RealMesh } from '../support/real-clients/index.js';
import { proxylessClients } from '../support/real-clients/proxyless-mesh.js';
import { ReconnectingEnvoy } from '../support/reconnecting-envoy.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually } from '../support/traffic.js';
import { envoyDataplane } from '../xds/fixtures.js';

/**
 * The seed scenario (kuma#2171, issue 4) end to end: `chancery run` instances sharing one real
 * Postgres behind a real TCP round-robin balancer, a real proxyless gRPC client (grpc-js-xds,
 * then gRPC's C-core) sending RPCs to real grpc-js backends, and Envoy-like ADS clients, one
 * over State of the World and one over Delta, that reconnect through the balancer after every
 * cut and check every response they get. Real Envoy goes through a failover in
 * test/seed/kuma-2171-real-clients.test.ts; here the proxyless clients, whose RPCs go straight to
 * the backends, say whether a failover ever left them without configuration.
 */

/** The failover's real clients: both proxyless kinds (any `RealClientKind` runs these scenarios). */
const CLIENTS: readonly RealClientKind[] = PROXYLESS_KINDS.map(proxylessClients);
/** The Envoy-like nodes, by the protocol each speaks. */
const ENVOYS: Readonly<Record<Protocol, string>> = { sotw: 'default.web-1', delta: 'default.web-2' };
const CLUSTERS = ['backend', 'localhost:9002'];
const LISTENERS = ['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001'];
/**
 * An instance is dead this long after its last save (every 100 ms): short enough that expiry is
 * seen within a test, long enough that a live instance starved of CPU on 2 cores (40 saves
 * missed in a row) is never taken for dead.
 */
const INSTANCE_TTL = '4s';
/** Cuts in the seed scenario, at the least. */
const CUTS = 4;

// Fails the file at once, naming the install command, on a machine without Python.
testPython();

const { newDatabase, cleanups } = chanceryOnPostgres();

interface Fleet {
  readonly instances: ChanceryProcess[];
  /** What the real client connects through. */
  readonly balancer: TcpProxy;
  /**
   * What the Envoy-like nodes connect through: a balancer of their own, so that their many
   * reconnects do not decide which instance the client's next connection reaches.
   */
  readonly envoyBalancer: TcpProxy;
  /** The real client's apps, Dataplanes written through the first instance's API. */
  readonly mesh: RealMesh;
  readonly client: RealClient;
  /** backend-1 and backend-2. */
  readonly backends: readonly RealBackend[];
  /** One Envoy-like node per protocol. */
  readonly envoys: readonly ReconnectingEnvoy[];
}

const apiOf = (instance: ChanceryProcess) => instance.url.replace('http://', '');

/**
 * `count` instances on a new database behind a balancer, backend-1 and backend-2 registered, a
 * client of `kind` served through the balancer, and the Envoy-like nodes.
 */
async function startFleet(kind: RealClientKind, count: number, { ttl = INSTANCE_TTL, args = [] as readonly string[] } = {}): Promise<Fleet> {
  const database = await newDatabase();
  const common = ['--store', database, '--record-interval', '100ms', '--instance-ttl', ttl, '--eviction-grace', '30s', ...args];
  // One at a time: the first migrates the schema; the rest find it done either way.
  const instances: ChanceryProcess[] = [];
  for (let i = 0; i < count; i++) instances.push(await startChancery([...common, '--instance-id', `instance-${i}`]));
  const [balancer, envoyBalancer] = await Promise.all([0, 1].map(() => startTcpProxy(instances.map((instance) => instance.xds))));
  cleanups.push(() => Promise.all([balancer!.close(), envoyBalancer!.close()]));
  const mesh = kind.deploy(apiOf(instances[0]!), balancer!.address);
  cleanups.push(() => mesh.stop());
  const backends = [await mesh.addBackend('backend-1'), await mesh.addBackend('backend-2')];
  const client = await mesh.addClient('client');
  for (const node of Object.values(ENVOYS)) {
    const name = node.slice('default.'.length);
    const { status, body } = await call(`${instances[0]!.url}/meshes/default/dataplanes/${name}`, 'PUT', envoyDataplane(name));
    expect(status, JSON.stringify(body)).toBeLessThan(300);
  }
  const envoys = PROTOCOLS.map((protocol) => new ReconnectingEnvoy(envoyBalancer!.address, ENVOYS[protocol], ['backend'], protocol));
  cleanups.push(() => Promise.all(envoys.map((envoy) => envoy.stop())));
  return { instances, balancer: balancer!, envoyBalancer: envoyBalancer!, mesh, client, backends, envoys };
}

/** Every node the fleet serves, sorted: the real client's and the Envoy-like ones. */
function nodesOf(fleet: Fleet): string[] {
  return [...fleet.mesh.served, ...Object.values(ENVOYS)].sort();
}

/**
 * I1 on the wire: after no LDS or CDS response on any stream did the node hold less than its
 * configuration (SotW: each response lists it all), and none removed a configured name (Delta).
 */
function expectNeverLessThanConfigured(node: ReconnectingEnvoy): void {
  for (const update of node.updates) {
    const configured = update.typeUrl === CLUSTER ? CLUSTERS : update.typeUrl === LISTENER ? LISTENERS : undefined;
    if (configured === undefined) continue;
    expect(update.removed.filter((name) => configured.includes(name)), `${update.typeUrl} from ${update.servedBy}`).toEqual([]);
    expect(update.holds, `${update.typeUrl} from ${update.servedBy}`).toEqual(configured);
  }
}

/**
 * The instance of each stream `node` opened, in time order, from its story across the fleet
 * (sessions stay for the eviction grace, so each instance still has its steps).
 */
async function streamsOf(fleet: Fleet, node: string): Promise<string[]> {
  const { status, body } = await call(`${fleet.instances[0]!.url}/sessions/${node}/history?scope=fleet`, 'GET');
  if (status !== 200) return [];
  return (body.transitions as Array<{ event: string; instance: string }>).filter((t) => t.event === 'stream.opened').map((t) => t.instance);
}

/** Runs of one instance, in order: more runs than instances means the node returned to one. */
function runsOf(servers: readonly string[]): string[] {
  return servers.filter((server, i) => server !== servers[i - 1]);
}

/** The streams serving `node` now, on whichever instances serve it. */
async function servingStreams(fleet: Fleet, node: string): Promise<string[]> {
  const views = await Promise.all(fleet.instances.map(async (instance) => (await call(`${instance.url}/sessions/${node}`, 'GET')).body));
  return views.filter((view) => view?.state === 'serving').map((view) => String(view.stream.id));
}

async function servingOn(instance: ChanceryProcess, node: string): Promise<boolean> {
  return (await call(`${instance.url}/sessions/${node}`, 'GET')).body?.state === 'serving';
}

async function allServingOn(instance: ChanceryProcess, nodes: readonly string[]): Promise<boolean> {
  for (const node of nodes) if (!(await servingOn(instance, node))) return false;
  return true;
}

async function fleetView(instance: ChanceryProcess): Promise<Array<{ node: string; instance: string; state: string }>> {
  const { status, body } = await call(`${instance.url}/sessions?scope=fleet`, 'GET');
  expect(status).toBe(200);
  return body.items;
}

/** Waits as long as a reconnect may take: the client's own backoff (grpc-js-xds never resets it) and a failover's. */
const RECONNECT = { attempts: 600, every: 50 };

describe.each(CLIENTS)('many instances, one fleet, behind a TCP load balancer, with a $name client', { timeout: budget(120_000) }, (kind) => {
  it('the seed scenario: cut again and again while backends change, no RPC fails and no response is less than the config', async () => {
    const fleet = await startFleet(kind, 2);
    const [a, b] = fleet.instances as [ChanceryProcess, ChanceryProcess];
    const [one] = fleet.backends as [RealBackend];
    const { mesh, client } = fleet;
    const traffic = client.traffic;
    const watch = mesh.watch();

    // Cut both balancers, each time once every node is served again on a new stream, at least
    // CUTS times and until the client has come back to an instance it had left (a connection cut
    // before its stream opened would make the balancer's round robin skip a turn). grpc-js-xds's
    // ADS backoff grows with each reconnect (about 1 s, 1.6 s, 2.6 s) and is never reset, so a few
    // cuts take it about 10 s. Meanwhile, through the API of one instance each: backend-3 joins
    // after the first cut, backend-1 leaves after the third.
    let three: RealBackend | undefined;
    const cuts = (async () => {
      for (let cut = 1; cut <= CUTS || (runsOf(await streamsOf(fleet, client.node)).length < 3 && cut <= 3 * CUTS); cut++) {
        const nodes = nodesOf(fleet);
        const old = new Set((await Promise.all(nodes.map((node) => servingStreams(fleet, node)))).flat());
        fleet.balancer.cutAll();
        fleet.envoyBalancer.cutAll();
        if (cut === 1) {
          mesh.api = apiOf(a);
          three = await mesh.addBackend('backend-3');
        }
        if (cut === 3) {
          mesh.api = apiOf(b);
          await mesh.delete('backend-1');
        }
        await eventually(`every node served again on a new stream after cut ${cut}`, async () => {
          for (const node of nodes) if ((await servingStreams(fleet, node)).every((stream) => old.has(stream))) return false;
          return true;
        }, RECONNECT);
      }
    })();
    await traffic.during(cuts);
    await cuts;

    await traffic.until('an RPC served by backend-3', ([last]) => last === 'backend-3', { attempts: 200, pauseMs: 50 });
    await traffic.until('convergence without backend-1', (recent) => !recent.includes('backend-1'), { window: 20, attempts: 400, pauseMs: 25 });
    const servedByOne = one.served;
    await traffic.calls(20);
    expect(one.served).toBe(servedByOne);
    expect(three!.served).toBeGreaterThan(0);
    expect(traffic.failures).toEqual([]);
    expect(await watch.end()).toEqual([]);

    // The client alternated between the instances and came back to one it had used: its
    // story continues across them, each instance's steps merged in time order.
    const story = (await call(`${a.url}/sessions/${client.node}/history?scope=fleet`, 'GET')).body;
    expect(new Set(story.sessions.map((s: { instance: string }) => s.instance))).toEqual(new Set(['instance-0', 'instance-1']));
    const steps: Array<{ at: string }> = story.transitions;
    expect(steps.map((t) => t.at)).toEqual(steps.map((t) => t.at).sort());
    const runs = runsOf(await streamsOf(fleet, client.node));
    expect(new Set(runs)).toEqual(new Set(['instance-0', 'instance-1']));
    expect(runs.length, runs.join(' → ')).toBeGreaterThan(2);
    // Each Envoy-like node was served by both instances, again and again, never with less than its configuration.
    for (const envoy of fleet.envoys) {
      const servedBy = envoy.streams.map((s) => s.servedBy()).filter((id) => id !== undefined);
      expect(new Set(servedBy), envoy.protocol).toEqual(new Set(['instance-0', 'instance-1']));
      expect(envoy.streams.length, envoy.protocol).toBeGreaterThan(CUTS);
      expectNeverLessThanConfigured(envoy);
      expect(envoy.updates.filter((r) => r.typeUrl === ENDPOINT).length, envoy.protocol).toBeGreaterThan(0);
    }
  });

  it('SIGTERM drains the instance serving a client: it exits 0, its nodes move over, no RPC fails, its records go at once', async () => {
    // A ttl longer than the test: the drained instance's records must go because it removes them.
    const fleet = await startFleet(kind, 2, { ttl: '60s', args: ['--drain-period', '1s'] });
    const { client, mesh } = fleet;
    const nodes = nodesOf(fleet);
    const watch = mesh.watch();
    const [leaving, staying] = (await servingOn(fleet.instances[0]!, client.node)) ? fleet.instances : [...fleet.instances].reverse();
    await eventually('every node recorded in the fleet view', async () => (await fleetView(staying!)).length === nodes.length, { every: 50 });

    let exitCode: number | null | undefined;
    const drain = (async () => {
      exitCode = await leaving!.stop();
      await eventually('every node served by the other instance', () => allServingOn(staying!, nodes), RECONNECT);
    })();
    await client.traffic.during(drain);
    await drain;
    expect(exitCode).toBe(0);
    expect(client.traffic.failures).toEqual([]);
    expect(await watch.end()).toEqual([]);
    for (const envoy of fleet.envoys) expectNeverLessThanConfigured(envoy);
    expect(leaving!.output()).toMatch(/"msg":"draining/);
    expect((await fleetView(staying!)).map((s) => [s.node, s.instance])).toEqual(nodes.map((node) => [node, staying!.instanceId]));
  });

  it('SIGKILL of the instance serving a client: no RPC fails, the other serves it, the dead one’s records expire', async () => {
    const fleet = await startFleet(kind, 2);
    const { client, mesh } = fleet;
    const nodes = nodesOf(fleet);
    const watch = mesh.watch();
    const [victim, survivor] = (await servingOn(fleet.instances[0]!, client.node)) ? fleet.instances : [...fleet.instances].reverse();
    await eventually('every node recorded in the fleet view', async () => (await fleetView(survivor!)).length === nodes.length, { every: 50 });

    let killed = false;
    const calling = client.traffic.completed;
    const kill = (async () => {
      await eventually('calls flowing', () => client.traffic.completed >= calling + 10);
      await victim!.kill();
      killed = true;
      await eventually('every node served by the survivor', () => allServingOn(survivor!, nodes), RECONNECT);
    })();
    await client.traffic.during(kill);
    expect(killed).toBe(true);
    expect(client.traffic.failures).toEqual([]);
    expect(await watch.end()).toEqual([]);
    for (const envoy of fleet.envoys) expectNeverLessThanConfigured(envoy);

    await eventually('the dead instance’s records to expire', async () => (await fleetView(survivor!)).every((s) => s.instance !== victim!.instanceId), {
      attempts: 200,
      every: 100,
    });
    const { body } = await call(`${survivor!.url}/instances`, 'GET');
    expect(body.self).toBe(survivor!.instanceId);
    expect(body.items.map((i: { id: string }) => i.id)).toEqual([survivor!.instanceId]);
  });
});
