import { describe, expect, it } from 'vitest';
import { PROTOCOLS, type Protocol } from '../../src/xds/index.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import { call, type ChanceryProcess, chanceryOnPostgres, startChancery } from '../e2e/chancery-process.js';
import { type EchoBackend, startEchoBackend } from '../support/echo-backend.js';
import { backendDataplane, clientDataplane } from '../support/harness.js';
import { ReconnectingEnvoy } from '../support/reconnecting-envoy.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually, pause, Traffic } from '../support/traffic.js';
import { createXdsEchoClient } from '../support/xds-client.js';
import { envoyDataplane } from '../xds/fixtures.js';

/**
 * The seed scenario (kuma#2171, issue 4) end to end: `chancery run` instances sharing one real
 * Postgres behind a real TCP round-robin balancer, a real `@grpc/grpc-js-xds` client sending
 * RPCs to real grpc-js backends, and an Envoy-like ADS client that reconnects through the
 * balancer after every cut and checks every response it gets. The Envoy-like client speaks
 * State of the World or Delta; the grpc-js-xds client speaks only SotW (reference/delta-xds.md).
 */

const CLIENT = 'default.client';
const ENVOY = 'default.web-1';
const CLUSTERS = ['backend', 'localhost:9002'];
const LISTENERS = ['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001'];
/**
 * An instance is dead this long after its last save (every 100 ms): short enough that expiry is
 * seen within a test, long enough that a live instance starved of CPU on 2 cores (40 saves
 * missed in a row) is never taken for dead.
 */
const INSTANCE_TTL = '4s';

const { newDatabase, cleanups } = chanceryOnPostgres();

interface Fleet {
  readonly instances: ChanceryProcess[];
  /** What the grpc-js-xds client connects through. */
  readonly balancer: TcpProxy;
  /**
   * What the Envoy-like node connects through: a balancer of its own, so that its many
   * reconnects do not decide which instance the client's next connection reaches.
   */
  readonly envoyBalancer: TcpProxy;
  readonly backends: EchoBackend[];
}

/** `count` instances on a new database behind a balancer, with backend-1 and backend-2 registered. */
async function startFleet(count: number, { ttl = INSTANCE_TTL, args = [] as readonly string[] } = {}): Promise<Fleet> {
  const database = await newDatabase();
  const common = ['--store', database, '--record-interval', '100ms', '--instance-ttl', ttl, '--eviction-grace', '30s', ...args];
  // One at a time: the first migrates the schema; the rest find it done either way.
  const instances: ChanceryProcess[] = [];
  for (let i = 0; i < count; i++) instances.push(await startChancery([...common, '--instance-id', `instance-${i}`]));
  const [balancer, envoyBalancer] = await Promise.all([0, 1].map(() => startTcpProxy(instances.map((instance) => instance.xds))));
  cleanups.push(() => Promise.all([balancer!.close(), envoyBalancer!.close()]));
  const backends = await Promise.all(['backend-1', 'backend-2', 'backend-3'].map(startEchoBackend));
  cleanups.push(() => Promise.all(backends.map((backend) => backend.stop())));
  const api = instances[0]!.url;
  for (const resource of [clientDataplane('client'), envoyDataplane('web-1'), ...backends.slice(0, 2).map((b) => backendDataplane(b.name, b.port))]) {
    const { status, body } = await call(`${api}/meshes/default/dataplanes/${resource.name}`, 'PUT', resource);
    expect(status, JSON.stringify(body)).toBeLessThan(300);
  }
  return { instances, balancer: balancer!, envoyBalancer: envoyBalancer!, backends };
}

function xdsClient(fleet: Fleet): Traffic {
  const client = createXdsEchoClient({ service: 'backend', xdsServer: fleet.balancer.address, nodeId: CLIENT });
  cleanups.push(() => client.close());
  return new Traffic(client);
}

function envoy(fleet: Fleet, protocol: Protocol): ReconnectingEnvoy {
  const started = new ReconnectingEnvoy(fleet.envoyBalancer.address, ENVOY, ['backend'], protocol);
  cleanups.push(() => started.stop());
  return started;
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

async function servingOn(instance: ChanceryProcess, node: string): Promise<boolean> {
  return (await call(`${instance.url}/sessions/${node}`, 'GET')).body?.state === 'serving';
}

async function fleetView(instance: ChanceryProcess): Promise<Array<{ node: string; instance: string; state: string }>> {
  const { status, body } = await call(`${instance.url}/sessions?scope=fleet`, 'GET');
  expect(status).toBe(200);
  return body.items;
}

describe.each(PROTOCOLS)('many instances, one fleet, behind a TCP load balancer, the Envoy-like node over %s', { timeout: 120_000 }, (protocol) => {
  it('the seed scenario: cut again and again for 10 s while backends change, no RPC fails and no response is less than the config', async () => {
    const fleet = await startFleet(2);
    const [a, b] = fleet.instances as [ChanceryProcess, ChanceryProcess];
    const [one, , three] = fleet.backends as [EchoBackend, EchoBackend, EchoBackend];
    const traffic = xdsClient(fleet);
    await traffic.until('a first RPC', (recent) => recent[0] !== 'failed', { attempts: 50 });
    const watcher = envoy(fleet, protocol);

    // Cut for at least 10 s, and until the client has come back to an instance it had left: its
    // ADS backoff grows with each reconnect (about 1 s, 1.6 s, 2.6 s), never reset (grpc-js-xds),
    // and a connection cut before its stream opened makes the balancer's round robin skip a turn.
    let cutting = true;
    const cuts = (async () => {
      const started = Date.now();
      while (Date.now() - started < 10_000 || (runsOf(await streamsOf(fleet, CLIENT)).length < 3 && Date.now() - started < 30_000)) {
        await pause(300);
        fleet.balancer.cutAll();
        fleet.envoyBalancer.cutAll();
      }
      cutting = false;
    })();
    const rpcs = traffic.during(cuts);

    // Meanwhile, through the API of one instance each: backend-3 joins, backend-1 leaves.
    await pause(2_000);
    expect((await call(`${a.url}/meshes/default/dataplanes/backend-3`, 'PUT', backendDataplane(three.name, three.port))).status).toBe(201);
    await pause(2_000);
    expect((await call(`${b.url}/meshes/default/dataplanes/backend-1`, 'DELETE')).status).toBe(204);
    await Promise.all([cuts, rpcs]);
    expect(cutting).toBe(false);

    await traffic.until('an RPC served by backend-3', ([last]) => last === 'backend-3', { attempts: 200, pauseMs: 50 });
    await traffic.until('convergence without backend-1', (recent) => !recent.includes('backend-1'), { window: 20, attempts: 400, pauseMs: 25 });
    const servedByOne = one.served;
    await traffic.calls(20);
    expect(one.served).toBe(servedByOne);
    expect(three.served).toBeGreaterThan(0);
    expect(traffic.failures).toEqual([]);

    // The xDS client alternated between the instances and came back to one it had used: its
    // story continues across them, each instance's steps merged in time order.
    const story = (await call(`${a.url}/sessions/${CLIENT}/history?scope=fleet`, 'GET')).body;
    expect(new Set(story.sessions.map((s: { instance: string }) => s.instance))).toEqual(new Set(['instance-0', 'instance-1']));
    const steps: Array<{ at: string }> = story.transitions;
    expect(steps.map((t) => t.at)).toEqual(steps.map((t) => t.at).sort());
    const runs = runsOf(await streamsOf(fleet, CLIENT));
    expect(new Set(runs)).toEqual(new Set(['instance-0', 'instance-1']));
    expect(runs.length, runs.join(' → ')).toBeGreaterThan(2);
    // The Envoy-like node was served by both instances, again and again, never with less than its configuration.
    const servedBy = watcher.streams.map((s) => s.servedBy()).filter((id) => id !== undefined);
    expect(new Set(servedBy)).toEqual(new Set(['instance-0', 'instance-1']));
    expect(watcher.streams.length).toBeGreaterThan(10);
    expectNeverLessThanConfigured(watcher);
    expect(watcher.updates.filter((r) => r.typeUrl === ENDPOINT).length).toBeGreaterThan(0);
  });

  it('SIGTERM drains the instance serving a client: it exits 0, its nodes move over, no RPC fails, its records go at once', async () => {
    // A ttl longer than the test: the drained instance's records must go because it removes them.
    const fleet = await startFleet(2, { ttl: '60s', args: ['--drain-period', '1s'] });
    const traffic = xdsClient(fleet);
    await traffic.until('a first RPC', (recent) => recent[0] !== 'failed', { attempts: 50 });
    const watcher = envoy(fleet, protocol);
    const [leaving, staying] = (await servingOn(fleet.instances[0]!, CLIENT)) ? fleet.instances : [...fleet.instances].reverse();
    await eventually('both nodes recorded in the fleet view', async () => (await fleetView(staying!)).length === 2, { every: 50 });

    let exitCode: number | null | undefined;
    const drain = (async () => {
      exitCode = await leaving!.stop();
      await eventually('the client served by the other instance', () => servingOn(staying!, CLIENT), { attempts: 600, every: 50 });
      await eventually('the Envoy served by the other instance', () => servingOn(staying!, ENVOY), { attempts: 600, every: 50 });
    })();
    await traffic.during(drain);
    await drain;
    expect(exitCode).toBe(0);
    expect(traffic.failures).toEqual([]);
    expectNeverLessThanConfigured(watcher);
    expect(leaving!.output()).toMatch(/"msg":"draining/);
    expect((await fleetView(staying!)).map((s) => [s.node, s.instance])).toEqual([
      [CLIENT, staying!.instanceId],
      [ENVOY, staying!.instanceId],
    ]);
  });

  it('SIGKILL of the instance serving a client: no RPC fails, the other serves it, the dead one’s records expire', async () => {
    const fleet = await startFleet(2);
    const traffic = xdsClient(fleet);
    await traffic.until('a first RPC', (recent) => recent[0] !== 'failed', { attempts: 50 });
    const watcher = envoy(fleet, protocol);
    const [victim, survivor] = (await servingOn(fleet.instances[0]!, CLIENT)) ? fleet.instances : [...fleet.instances].reverse();
    await eventually('both nodes recorded in the fleet view', async () => (await fleetView(survivor!)).length === 2, { every: 50 });

    let killed = false;
    const kill = (async () => {
      await pause(500);
      await victim!.kill();
      killed = true;
      await eventually('the client served by the survivor', () => servingOn(survivor!, CLIENT), { attempts: 600, every: 50 });
      await eventually('the Envoy served by the survivor', () => servingOn(survivor!, ENVOY), { attempts: 600, every: 50 });
    })();
    await traffic.during(kill);
    expect(killed).toBe(true);
    expect(traffic.failures).toEqual([]);
    expectNeverLessThanConfigured(watcher);

    await eventually('the dead instance’s records to expire', async () => (await fleetView(survivor!)).every((s) => s.instance !== victim!.instanceId), {
      attempts: 200,
      every: 100,
    });
    const { body } = await call(`${survivor!.url}/instances`, 'GET');
    expect(body.self).toBe(survivor!.instanceId);
    expect(body.items.map((i: { id: string }) => i.id)).toEqual([survivor!.instanceId]);
  });
});
