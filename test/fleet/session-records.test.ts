import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ControlPlane } from '../../src/index.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import type { EventLog } from '../../src/store/types.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { envoyHandshake } from '../support/envoy-handshake.js';
import { type FleetInstance, startFleetInstance } from '../support/fleet-instance.js';
import { backendDataplane } from '../support/harness.js';
import { OpenStreams } from '../support/open-streams.js';
import { eventually } from '../support/traffic.js';
import { ScriptedLog } from '../store/scripted-log.js';
import { envoyDataplane, namesOf, sessionIn } from '../xds/fixtures.js';

/**
 * Two instances in one process sharing one store (a MemoryEventLog: its change feed and its
 * session records are shared as Postgres's would be), each with its own xDS server on
 * loopback, record ticks driven by hand and session timers on a simulated clock.
 */

const NODE = 'default.web-1';

const running: ControlPlane[] = [];
const streams = new OpenStreams();

afterEach(async () => {
  streams.closeAll();
  for (const cp of running.splice(0)) await cp.stop();
});

async function instance(log: EventLog, id: string): Promise<FleetInstance> {
  const started = await startFleetInstance(log, id);
  running.push(started.cp);
  return started;
}

/**
 * Connects as Envoy does (CDS, EDS, LDS, each ACKed) straight to one instance; with `held`,
 * as an Envoy that reconnects holding those CDS and LDS versions.
 */
async function envoy(target: FleetInstance, held?: { cds: string; lds: string }): Promise<AdsStream> {
  const stream = streams.sotw({ address: target.cp.addresses.xds });
  if (held) {
    stream.send({ typeUrl: CLUSTER, nodeId: NODE, versionInfo: held.cds });
    stream.send({ typeUrl: ENDPOINT, resourceNames: ['backend'] });
    stream.send({ typeUrl: LISTENER, versionInfo: held.lds });
    await sessionIn(target.cp, NODE, 'serving');
    return stream;
  }
  await envoyHandshake(stream, NODE);
  await sessionIn(target.cp, NODE, 'serving');
  return stream;
}

async function twoInstances() {
  const log = new MemoryEventLog();
  const a = await instance(log, 'a');
  const b = await instance(log, 'b');
  await a.cp.apply(backendDataplane('backend-1', 10001));
  await a.cp.apply(envoyDataplane('web-1'));
  return { log, a, b };
}

/** Emits a record tick on each instance and waits until `condition` holds on `reader`'s fleet view. */
async function saved(reader: FleetInstance, writers: readonly FleetInstance[], what: string, condition: (fleet: Awaited<ReturnType<ControlPlane['fleetSessions']>>) => boolean) {
  await eventually(what, async () => {
    for (const writer of writers) writer.save.next();
    return condition(await reader.cp.fleetSessions());
  });
}

describe('session records: every instance sees which instance serves which node', () => {
  it('shows a node served by A in B’s fleet view, with A as its instance and what it ACKed', async () => {
    const { a, b } = await twoInstances();
    await envoy(a);
    await eventually('the LDS ACK at A', () => a.cp.session(NODE)!.types['LDS']!.acked !== undefined);
    const live = a.cp.session(NODE)!;

    await saved(b, [a], 'A’s record of the ACKs', (fleet) => fleet.some((s) => s.node === NODE && s.types['LDS']?.acked !== undefined));
    const [seen] = (await b.cp.fleetSessions()).filter((s) => s.node === NODE);
    expect(seen).toMatchObject({ node: NODE, instance: 'a', state: 'serving', revision: live.revision, stream: live.stream });
    expect(seen!.recordedAt).toEqual(expect.any(String));
    for (const type of ['CDS', 'EDS', 'LDS']) expect(seen!.types[type]!.acked!.version).toBe(live.types[type]!.acked!.version);
    expect(seen!.transitions.map((t) => t.to)).toEqual(['serving']);
    expect((await b.cp.instances()).map((i) => [i.id, i.xds])).toEqual([
      ['a', a.cp.addresses.xds],
      ['b', b.cp.addresses.xds],
    ]);
  });

  it('saves in batches: many ACKs between two ticks are one save', async () => {
    const { log, a, b } = await twoInstances();
    const save = vi.spyOn(log.sessionRecords, 'save');
    const stream = await envoy(a);
    // Twenty changes, each pushed to the node and ACKed by it.
    for (let port = 10_002; port < 10_022; port++) {
      await a.cp.apply(backendDataplane(`backend-${port}`, port));
      stream.ack(await stream.nextResponse(), ['backend']);
    }
    expect(save).not.toHaveBeenCalled();

    a.save.next();
    await eventually('the save', () => save.mock.calls.length === 1);
    expect(save.mock.calls[0]![0].upserts.map((record) => record.node)).toEqual([NODE]);
    expect(save.mock.calls[0]![0].upserts[0]!.story).toEqual(a.cp.session(NODE)!.transitions);
    const [seen] = await b.cp.fleetSessions(NODE);
    expect(seen!.types['EDS']!.acked!.version).toBe(a.cp.session(NODE)!.types['EDS']!.acked!.version);

    // ACKs alone change the record, not the story: it is not saved again, and kept.
    await a.cp.apply(backendDataplane('backend-10022', 10_022));
    stream.ack(await stream.nextResponse(), ['backend']);
    await eventually('the ACK at A', () => a.cp.session(NODE)!.types['EDS']!.acked!.version === a.cp.session(NODE)!.types['EDS']!.sent!.version);
    a.save.next();
    await eventually('the second save', () => save.mock.calls.length === 2);
    expect(save.mock.calls[1]![0].upserts[0]!.story).toBeUndefined();
    const [again] = await b.cp.fleetSessions(NODE);
    expect(again!.types['EDS']!.acked!.version).toBe(a.cp.session(NODE)!.types['EDS']!.acked!.version);
    expect(again!.transitions).toEqual(a.cp.session(NODE)!.transitions);
  });

  it('serves one node on two instances at once, and the old stream’s teardown does not touch the new one', async () => {
    const { a, b } = await twoInstances();
    const old = await envoy(a);
    // The node reconnects to B before A has noticed its old connection is dead.
    const current = await envoy(b);
    for (const stream of [old, current]) {
      expect(namesOf(stream.responses.find((r) => r.typeUrl === CLUSTER)!)).toEqual(['backend', 'localhost:9002']);
      expect(namesOf(stream.responses.find((r) => r.typeUrl === LISTENER)!)).toEqual(['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001']);
    }
    await saved(b, [a, b], 'the node on both instances', (fleet) => fleet.filter((s) => s.node === NODE).length === 2);

    // A notices the dead stream at last, and evicts the session after its grace.
    old.close();
    await sessionIn(a.cp, NODE, 'disconnected');
    a.clock.increment(10_000);
    await eventually('A’s eviction', () => a.cp.session(NODE) === undefined);
    await saved(b, [a, b], 'A’s record removed', (fleet) => fleet.filter((s) => s.node === NODE).length === 1);

    expect((await a.cp.fleetSessions(NODE)).map((s) => [s.instance, s.state])).toEqual([['b', 'serving']]);
    // B still serves the node: a change reaches it on the new stream.
    const before = current.responses.length;
    await a.cp.apply(backendDataplane('backend-2', 10002));
    const pushed = await current.nextResponse(before + 1);
    expect(pushed.typeUrl).toBe(ENDPOINT);
    // Written on A, ACKed at B.
    current.ack(pushed, ['backend']);
    await eventually('the ACK at B', () => b.cp.session(NODE)!.types['EDS']!.acked?.nonce === pushed.nonce);
    expect(b.cp.session(NODE)).toMatchObject({ state: 'serving', instance: 'b', types: { EDS: { acked: { version: pushed.versionInfo } } } });
  });

  it('removes an instance’s records as soon as it stops cleanly', async () => {
    const { a, b } = await twoInstances();
    await envoy(a);
    await saved(b, [a], 'A’s record', (fleet) => fleet.some((s) => s.instance === 'a'));
    await a.cp.stop();
    running.splice(running.indexOf(a.cp), 1);
    expect(await b.cp.fleetSessions()).toEqual([]);
    expect((await b.cp.instances()).map((i) => i.id)).toEqual(['b']);
  });

  it('answers a node arriving from an instance whose store was ahead from the log’s end, never with less than it holds', async () => {
    const log = new MemoryEventLog();
    const a = await instance(log, 'a');
    await a.cp.apply(backendDataplane('backend-1', 10001));
    await a.cp.apply(backendDataplane('payments-1', 10003, 'payments'));
    await a.cp.apply(envoyDataplane('web-1'));
    // B starts from the log as it is, then hears of no append by itself: its projection stays
    // behind until it reads the log (a lost wake-up, or a feed a few ms behind A's writes).
    const b = await instance(new ScriptedLog({ inner: log, loseWakeups: true }), 'b');
    await a.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const first = await envoy(a);
    const clusters = first.responses.find((r) => r.typeUrl === CLUSTER)!;
    const listeners = first.responses.find((r) => r.typeUrl === LISTENER)!;
    expect(namesOf(clusters)).toEqual(['backend', 'localhost:9002', 'payments']);
    expect(b.cp.store.projection.revision).toBeLessThan(a.cp.store.projection.revision);
    first.close();

    const moved = await envoy(b, { cds: clusters.versionInfo, lds: listeners.versionInfo });
    // What it holds is current: B does not send CDS or LDS again, and certainly not fewer.
    expect(moved.responses.filter((r) => r.typeUrl === CLUSTER || r.typeUrl === LISTENER)).toEqual([]);
    expect(b.cp.session(NODE)!.revision).toBe(a.cp.store.projection.revision);
  });

  it('leaves a node arriving with configuration unanswered while the store cannot be read, and answers it once it can', async () => {
    const log = new MemoryEventLog();
    const a = await instance(log, 'a');
    await a.cp.apply(backendDataplane('backend-1', 10001));
    await a.cp.apply(backendDataplane('payments-1', 10003, 'payments'));
    await a.cp.apply(envoyDataplane('web-1'));
    const behind = new ScriptedLog({ inner: log, loseWakeups: true });
    const b = await instance(behind, 'b');
    await a.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const first = await envoy(a);
    const clusters = first.responses.find((r) => r.typeUrl === CLUSTER)!;
    const listeners = first.responses.find((r) => r.typeUrl === LISTENER)!;
    first.close();

    // B cannot read the log: rather than answer from its projection, which is behind, it waits.
    behind.failure = new Error('connection to the database lost');
    const moved = streams.sotw({ address: b.cp.addresses.xds });
    moved.send({ typeUrl: CLUSTER, nodeId: NODE, versionInfo: clusters.versionInfo });
    moved.send({ typeUrl: ENDPOINT, resourceNames: ['backend', 'payments'] });
    moved.send({ typeUrl: LISTENER, versionInfo: listeners.versionInfo });
    await eventually('the failed catch-up', () => b.cp.session(NODE)?.state === 'awaiting-snapshot' && behind.reads > 0);
    b.watchdog.next();
    await eventually('a second failed try', () => behind.reads > 1);
    expect(moved.responses).toEqual([]);
    expect(b.cp.session(NODE)!.state).toBe('awaiting-snapshot');

    behind.failure = undefined;
    // Each tick tries again (a try already under way when the store came back still fails).
    await eventually('the node served once a try succeeds', () => {
      b.watchdog.next();
      return b.cp.session(NODE)!.state === 'serving';
    });
    expect(b.cp.session(NODE)!.revision).toBe(a.cp.store.projection.revision);
    // What it holds is current: only the EDS it asked for by name is sent.
    await moved.until(() => moved.responses.length > 0, 'the EDS response');
    expect(moved.responses.map((r) => r.typeUrl)).toEqual([ENDPOINT]);
  });

  it('forgets a node evicted while it waited for the store: no later try reads the log for it (I3)', async () => {
    const log = new MemoryEventLog();
    const a = await instance(log, 'a');
    await a.cp.apply(backendDataplane('backend-1', 10001));
    await a.cp.apply(envoyDataplane('web-1'));
    const behind = new ScriptedLog({ inner: log, loseWakeups: true });
    const b = await instance(behind, 'b');
    const first = await envoy(a);
    const clusters = first.responses.find((r) => r.typeUrl === CLUSTER)!;
    first.close();

    behind.failure = new Error('connection to the database lost');
    const moved = streams.sotw({ address: b.cp.addresses.xds });
    moved.send({ typeUrl: CLUSTER, nodeId: NODE, versionInfo: clusters.versionInfo });
    await eventually('the failed catch-up', () => b.cp.session(NODE)?.state === 'awaiting-snapshot' && behind.reads > 0);
    // Let the failed try settle, so the session is parked for the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    moved.close();
    await sessionIn(b.cp, NODE, 'disconnected');
    b.clock.increment(10_000);
    await eventually('the eviction', () => b.cp.session(NODE) === undefined);

    const reads = behind.reads;
    b.watchdog.next();
    await new Promise((resolve) => setImmediate(resolve));
    expect(behind.reads).toBe(reads);
  });
});
