import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openEventLog, type EventLog } from '../../src/store/index.js';
import type { DecodedDeltaResponse } from '../../src/xds/decode.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import { eventually } from '../support/traffic.js';
import type { DeltaStream } from '../support/ads-client.js';
import { startFleetInstance, type FleetInstance } from '../support/fleet-instance.js';
import { backendDataplane } from '../support/harness.js';
import { OpenStreams } from '../support/open-streams.js';
import { startTestPostgres, type TestPostgres } from '../store/test-postgres.js';
import { envoyDataplane } from '../xds/fixtures.js';

/**
 * A Delta node moving between instances (a failover, a drain, a maximum connection age): two
 * instances on one real Postgres. What it names in `initial_resource_versions` is compared with
 * what the other instance generates, whose versions are the same content hashes (I6).
 */

const NODE = 'default.web-1';
let postgres: TestPostgres;
const cleanups: Array<() => unknown> = [];
const streams = new OpenStreams();

beforeAll(async () => {
  postgres = await startTestPostgres();
});
afterEach(async () => {
  streams.closeAll();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await postgres?.stop();
});

/** An event log whose reads of new events wait while it is paused: a store fallen behind the log. */
interface PausableLog extends EventLog {
  /** From now on, `readAfter` waits: the store learns nothing new, neither by its change feed nor by a catch-up. */
  pause(): void;
  resume(): void;
}

function pausable(log: EventLog): PausableLog {
  let resumed = Promise.resolve();
  let resume = () => {};
  return {
    append: (writes, author) => log.append(writes, author),
    readAfter: async (after, limit) => {
      await resumed;
      return log.readAfter(after, limit);
    },
    readKey: (key, after, limit) => log.readKey(key, after, limit),
    readAt: (key, revision) => log.readAt(key, revision),
    readCheckpoint: () => log.readCheckpoint(),
    writeCheckpoint: (checkpoint, author) => log.writeCheckpoint(checkpoint, author),
    wakeups: log.wakeups,
    sessionRecords: log.sessionRecords,
    close: () => log.close(),
    pause: () => {
      resumed = new Promise((done) => (resume = done));
    },
    resume: () => resume(),
  };
}

/** An instance on its own connection to the database, as a separate process would have. */
async function instance(url: string, id: string): Promise<FleetInstance & { readonly log: PausableLog }> {
  const log = pausable(await openEventLog(url, { instance: id }));
  const started = await startFleetInstance(log, id);
  cleanups.push(async () => {
    log.resume();
    await started.cp.stop();
    await log.close();
  });
  return { ...started, log };
}

/** What a node holds after `responses`, per type: name → version. */
function heldAfter(responses: readonly DecodedDeltaResponse[]): Map<string, Record<string, string>> {
  const held = new Map<string, Record<string, string>>();
  for (const response of responses) {
    const versions = held.get(response.typeUrl) ?? {};
    for (const resource of response.resources) versions[resource.name] = resource.version;
    for (const name of response.removed) delete versions[name];
    held.set(response.typeUrl, versions);
  }
  return held;
}

/**
 * Every response from the `from`th up to the answer of a barrier request (a route nobody has),
 * ACKing each. Pass `from` when the server may answer before the barrier is sent.
 */
async function settle(stream: DeltaStream, barrier: string, from = stream.responses.length): Promise<DecodedDeltaResponse[]> {
  stream.send({ typeUrl: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration', subscribe: [barrier] });
  await stream.until(() => stream.responses.slice(from).some((r) => r.removed.includes(barrier)), `the answer to ${barrier}`);
  const all = stream.responses.slice(from);
  for (const response of all) stream.ack(response);
  return all.slice(0, all.findIndex((r) => r.removed.includes(barrier)));
}

describe('a Delta node that moves from instance A to instance B', () => {
  it('is sent by B only what differs from what it holds, and loses nothing that exists', async () => {
    const url = await postgres.newDatabase();
    const a = await instance(url, 'instance-a');
    const b = await instance(url, 'instance-b');
    await a.cp.apply(backendDataplane('backend-1', 10001));
    await a.cp.apply(envoyDataplane('web-1'));

    // Served by A, as Envoy subscribes: wildcard CDS, EDS of its cluster, wildcard LDS.
    const first = streams.delta({ address: a.cp.addresses.xds });
    first.send({ typeUrl: CLUSTER, nodeId: NODE });
    first.send({ typeUrl: ENDPOINT, subscribe: ['backend'] });
    first.send({ typeUrl: LISTENER });
    const held = heldAfter(await settle(first, 'on-a'));
    expect(Object.keys(held.get(CLUSTER)!).sort()).toEqual(['backend', 'localhost:9002']);
    expect(Object.keys(held.get(ENDPOINT)!)).toEqual(['backend']);
    first.close();

    // B has read the same log: the node comes back holding everything at the current versions.
    await b.cp.store.refresh();
    const second = streams.delta({ address: b.cp.addresses.xds });
    second.send({ typeUrl: CLUSTER, nodeId: NODE, initialVersions: held.get(CLUSTER)! });
    second.send({ typeUrl: ENDPOINT, subscribe: ['backend'], initialVersions: held.get(ENDPOINT)! });
    second.send({ typeUrl: LISTENER, initialVersions: held.get(LISTENER)! });
    const fromB = await settle(second, 'on-b');
    // The first wildcard requests are answered, with nothing: the node holds it all.
    expect(fromB.map((r) => [r.typeUrl, r.resources.map((x) => x.name), r.removed])).toEqual([
      [CLUSTER, [], []],
      [LISTENER, [], []],
    ]);
    expect(fromB.every((r) => r.controlPlane === 'instance-b')).toBe(true);
    expect(b.cp.session(NODE)?.types['CDS']?.held).toEqual(held.get(CLUSTER));

    // A change written on A reaches the node through B, as what changed only; B may push it
    // before the barrier goes out, so what it sends is counted from before the write.
    const beforeChange = second.responses.length;
    await a.cp.apply(backendDataplane('backend-2', 10003));
    const { revision } = await b.cp.store.refresh();
    // B regenerates on its own schedule: the barrier only orders what B has already decided to send.
    await eventually('B serving the change', () => b.cp.session(NODE)?.revision === revision);
    const changed = await settle(second, 'after-change', beforeChange);
    expect(changed.map((r) => [r.typeUrl, r.resources.map((x) => x.name), r.removed])).toEqual([[ENDPOINT, ['backend'], []]]);
  });

  it('is sent what changed while it moved, and told what is gone, never less than what exists', async () => {
    const url = await postgres.newDatabase();
    const a = await instance(url, 'instance-a');
    const b = await instance(url, 'instance-b');
    await a.cp.apply(backendDataplane('backend-1', 10001));
    await a.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const first = streams.delta({ address: a.cp.addresses.xds });
    first.send({ typeUrl: CLUSTER, nodeId: NODE });
    const clusters = (await settle(first, 'on-a')).find((r) => r.typeUrl === CLUSTER)!;
    first.close();
    // While it moves, its Dataplane loses an outbound and its app port moves.
    await a.cp.apply(envoyDataplane('web-1', { inbound: [{ port: 10002, servicePort: 9005, service: 'web' }] }));

    const second = streams.delta({ address: b.cp.addresses.xds });
    second.send({ typeUrl: CLUSTER, nodeId: NODE, initialVersions: Object.fromEntries(clusters.resources.map((r) => [r.name, r.version])) });
    const [back] = (await settle(second, 'on-b')).filter((r) => r.typeUrl === CLUSTER);
    // B read the log to its end before answering (the node holds configuration): it is current.
    expect(back!.resources.map((r) => r.name)).toEqual(['localhost:9005']);
    expect(back!.removed).toEqual(['localhost:9002', 'payments']);
    expect(b.cp.session(NODE)?.types['CDS']?.held).toEqual({ backend: clusters.resources.find((r) => r.name === 'backend')!.version, 'localhost:9005': back!.resources[0]!.version });
  });

  it('waits, when it is behind what the node holds, until it has read the log to its end: then it is current and removes nothing', async () => {
    const url = await postgres.newDatabase();
    const a = await instance(url, 'instance-a');
    const b = await instance(url, 'instance-b');
    await a.cp.apply(backendDataplane('backend-1', 10001));
    await a.cp.apply(envoyDataplane('web-1'));
    const before = await b.cp.store.refresh();
    // B stops reading the log (a lost NOTIFY, a slow read): what A writes now, B does not know.
    b.log.pause();
    await a.cp.apply(backendDataplane('ledger-1', 10005, 'payments'));
    await a.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));

    // The node is served the new configuration by A, then moves to B.
    const first = streams.delta({ address: a.cp.addresses.xds });
    first.send({ typeUrl: CLUSTER, nodeId: NODE });
    first.send({ typeUrl: ENDPOINT, subscribe: ['backend', 'payments'] });
    first.send({ typeUrl: LISTENER });
    const fromA = await settle(first, 'on-a');
    const held = heldAfter(fromA);
    expect(Object.keys(held.get(CLUSTER)!).sort()).toEqual(['backend', 'localhost:9002', 'payments']);
    const versionsFromA = Object.fromEntries(fromA.map((r) => [r.typeUrl, r.systemVersionInfo]));
    first.close();

    const second = streams.delta({ address: b.cp.addresses.xds });
    let storyAtFirstClusters: string[] | undefined;
    second.onResponse((response) => {
      if (response.typeUrl === CLUSTER) storyAtFirstClusters ??= b.cp.session(NODE)!.transitions.map((t) => t.event);
    });
    second.send({ typeUrl: CLUSTER, nodeId: NODE, initialVersions: held.get(CLUSTER)! });
    second.send({ typeUrl: ENDPOINT, subscribe: ['backend', 'payments'], initialVersions: held.get(ENDPOINT)! });
    second.send({ typeUrl: LISTENER, initialVersions: held.get(LISTENER)! });
    await eventually('B to have the node', () => b.cp.session(NODE) !== undefined);
    const whileBehind = { step: b.cp.session(NODE)!.step, revision: b.cp.store.projection.revision };
    b.log.resume();
    const fromB = await settle(second, 'on-b');

    // B read the log to its end before it answered, and had been behind until then.
    expect(storyAtFirstClusters).toEqual(['stream.opened', 'store.caughtUp']);
    expect(whileBehind).toEqual({ step: 'catching-up', revision: before.revision });
    // Its answers carry the version A served: the node holds it all, so nothing is sent and nothing removed.
    expect(fromB.map((r) => [r.typeUrl, r.systemVersionInfo, r.resources.map((x) => x.name), r.removed])).toEqual([
      [CLUSTER, versionsFromA[CLUSTER], [], []],
      [LISTENER, versionsFromA[LISTENER], [], []],
    ]);
    expect(b.cp.session(NODE)?.types['CDS']?.held).toEqual(held.get(CLUSTER));
  });
});
