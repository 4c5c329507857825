import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../src/index.js';
import type { ControlPlaneOptions } from '../../src/control-plane-options.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import { PROTOCOLS, type Protocol } from '../../src/xds/index.js';
import { CLUSTER, LISTENER } from '../../src/xds/type-urls.js';
import { startEchoBackend } from '../support/echo-backend.js';
import { type FleetInstance, startFleetInstance } from '../support/fleet-instance.js';
import { backendDataplane, clientDataplane } from '../support/harness.js';
import { ReconnectingEnvoy } from '../support/reconnecting-envoy.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually, Traffic } from '../support/traffic.js';
import { createXdsEchoClient } from '../support/xds-client.js';
import { envoyDataplane } from '../xds/fixtures.js';
import { budget } from '../support/budget.js';

/**
 * Rebalancing and draining (issue 4), with two instances in one process sharing one store,
 * behind a real TCP round-robin balancer: `maxConnectionAge` moves a fleet onto an instance
 * added later; `drain()` moves every node off an instance without a storm or a failed RPC.
 */

const NODES = ['web-1', 'web-2', 'web-3', 'web-4', 'web-5', 'web-6'];
const cleanups: Array<() => unknown> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function instance(log: MemoryEventLog, id: string, options: Partial<ControlPlaneOptions> = {}): Promise<FleetInstance> {
  const started = await startFleetInstance(log, id, options);
  cleanups.push(() => started.cp.stop());
  return started;
}

async function balancer(targets: readonly string[]): Promise<TcpProxy> {
  const proxy = await startTcpProxy(targets);
  cleanups.push(() => proxy.close());
  return proxy;
}

/** Envoy-like nodes behind the balancer, one per name, reconnecting whenever their stream ends. */
function envoys(address: string, protocol: Protocol = 'sotw'): ReconnectingEnvoy[] {
  return NODES.map((name) => {
    const node = new ReconnectingEnvoy(address, `default.${name}`, ['backend'], protocol);
    cleanups.push(() => node.stop());
    return node;
  });
}

async function meshOn(cp: ControlPlane): Promise<void> {
  await cp.apply(backendDataplane('backend-1', 10001));
  for (const name of NODES) await cp.apply(envoyDataplane(name));
}

const servingOn = (cp: ControlPlane) => cp.listSessions().filter((session) => session.state === 'serving').length;

/** After every LDS or CDS response, each node held its whole configuration, and none removed any of it (Delta). */
function expectFullConfiguration(nodes: readonly ReconnectingEnvoy[]): void {
  const configured: Record<string, readonly string[]> = {
    [CLUSTER]: ['backend', 'localhost:9002'],
    [LISTENER]: ['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001'],
  };
  for (const update of nodes.flatMap((node) => node.updates)) {
    const names = configured[update.typeUrl];
    if (names === undefined) continue;
    expect(update.removed.filter((name) => names.includes(name))).toEqual([]);
    expect(update.holds).toEqual(names);
  }
}

describe('rebalancing a fleet across instances', { timeout: budget(60_000) }, () => {
  it.each(PROTOCOLS)('maxConnectionAge ends old streams with UNAVAILABLE, so a fleet over %s spreads onto an instance added later', async (protocol) => {
    const log = new MemoryEventLog();
    const { cp: a } = await instance(log, 'a', { maxConnectionAge: 600 });
    const { cp: b } = await instance(log, 'b', { maxConnectionAge: 600 });
    await meshOn(a);
    const backend = await startEchoBackend('backend-1');
    cleanups.push(() => backend.stop());
    await a.apply(backendDataplane('backend-1', backend.port));
    await a.apply(clientDataplane('client'));

    // Before the scale-out, the balancer knows only A.
    const front = await balancer([a.addresses.xds]);
    const nodes = envoys(front.address, protocol);
    const client = createXdsEchoClient({ service: 'backend', xdsServer: front.address, nodeId: 'default.client' });
    cleanups.push(() => client.close());
    const traffic = new Traffic(client);
    await traffic.until('a first RPC', ([last]) => last === 'backend-1', { attempts: 50 });
    await eventually('every node served by A', () => servingOn(a) === NODES.length + 1, { every: 20 });

    front.setTargets([a.addresses.xds, b.addresses.xds]);
    const spread = eventually('nodes served by both instances', () => servingOn(a) >= 2 && servingOn(b) >= 2, { attempts: 300, every: 50 });
    await traffic.during(spread);
    await spread;

    const ends = nodes.flatMap((node) => node.streams.map(({ stream }) => stream.ended)).filter((end) => end !== undefined);
    expect(ends.some((end) => end.code === status.UNAVAILABLE && /maximum connection age/.test(end.details))).toBe(true);
    expect(traffic.failures).toEqual([]);
    expectFullConfiguration(nodes);
  });

  it('drain() refuses new streams and ends open ones with UNAVAILABLE over the drain period; every node moves to the other instance', async () => {
    const log = new MemoryEventLog();
    const { cp: a, clock } = await instance(log, 'a', { drainPeriod: 600 });
    const { cp: b } = await instance(log, 'b');
    await meshOn(a);
    const front = await balancer([a.addresses.xds, b.addresses.xds]);
    const nodes = envoys(front.address);
    await eventually('every node served', () => servingOn(a) + servingOn(b) === NODES.length, { every: 20 });
    const onA = servingOn(a);
    // All on A: grpc-js clients to one address share one connection, the balancer's first.
    expect(onA).toBe(NODES.length);

    // The drain's steps run on the session clock: the first at once, the others as it advances.
    let done = false;
    const draining = a.drain().then(() => (done = true));
    // Spread over the period: one session at once, the others step by step, not all together.
    expect(a.listSessions()).toHaveLength(onA - 1);
    while (!done) {
      clock.increment(100);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await draining;
    await eventually('every node served by B', () => servingOn(b) === NODES.length, { attempts: 300, every: 20 });

    const drained = nodes.flatMap((node) => node.streams.map(({ stream }) => stream.ended)).filter((end) => end?.code === status.UNAVAILABLE && /draining/.test(end.details));
    expect(drained).toHaveLength(onA);
    expect(a.listSessions()).toEqual([]);
    expect((await b.fleetSessions()).map((session) => session.instance)).toEqual(NODES.map(() => 'b'));
    expectFullConfiguration(nodes);
  });
});
