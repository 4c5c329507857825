import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DecodedResponse } from '../../src/xds/decode.js';
import { StreamWriter } from '../../src/xds/stream-writer.js';
import { CLUSTER, ENDPOINT } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { envoyHandshake } from '../support/envoy-handshake.js';
import { backendDataplane } from '../support/harness.js';
import { harnessFor } from '../support/harness-for.js';
import { BACKEND, envoyDataplane, getSession, namesOf, sessionIn, settle } from './fixtures.js';

const NODE = 'default.web-1';
const CLUSTERS = ['backend', 'localhost:9002'];
const LISTENERS = ['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001'];

const harness = harnessFor({ resources: [BACKEND, envoyDataplane('web-1')] });
afterEach(() => {
  vi.restoreAllMocks();
});

/** Opens a stream for the Envoy node and waits for its CDS and LDS, ACKing both. */
async function connect(): Promise<{ stream: AdsStream; clusters: DecodedResponse; listeners: DecodedResponse }> {
  const stream = harness.streams.sotw();
  return { stream, ...(await envoyHandshake(stream, NODE, { endpoints: false })) };
}

/** Breaks the stream from the client side and waits until the session has seen it. */
async function breakStream(stream: AdsStream): Promise<void> {
  stream.close();
  await sessionIn(harness.cp, NODE, 'disconnected');
}

describe('I4 one owner: a newer stream for a node supersedes the older', () => {
  it('ends the older stream with a status and serves the newer its real configuration', async () => {
    const first = await connect();
    const second = await connect();

    const end = await first.stream.ending();
    expect(end.code).toBe(status.ABORTED);
    expect(end.details).toContain('superseded');
    expect(end.details).toContain(NODE);
    expect(namesOf(second.clusters)).toEqual(CLUSTERS);
    expect(namesOf(second.listeners)).toEqual(LISTENERS);
  });

  it('does not let the older stream\'s cancellation disturb the newer one', async () => {
    const first = await connect();
    const second = await connect();
    await first.stream.ending();
    first.stream.close();

    const streamId = harness.cp.session(NODE)?.stream?.id;
    const { body } = await getSession(harness, NODE);
    expect(body.state).toBe('serving');
    expect(body.stream?.id).toBe(streamId);
    const list = (await (await fetch(`http://${harness.api}/sessions`)).json()) as { items: { node: string; state: string; stream?: { id: string } }[] };
    expect(list.items).toEqual([expect.objectContaining({ node: NODE, state: 'serving', stream: expect.objectContaining({ id: streamId }) })]);

    // A store change still reaches the newer stream.
    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const pushed = await second.stream.nextResponse(3);
    expect(pushed.typeUrl).toBe(CLUSTER);
    expect(namesOf(pushed)).toEqual([...CLUSTERS, 'payments']);
    expect(first.stream.responses).toHaveLength(2);
  });
});

describe('reconnect and eviction (DESIGN §4: disconnected → awaiting-snapshot, or evicted after the grace)', () => {
  it('serves a node reconnecting within the grace its real configuration as the first response', async () => {
    const before = await connect();
    await breakStream(before.stream);
    harness.clock.increment(9_999);
    expect(harness.cp.session(NODE)?.state).toBe('disconnected');

    const after = await connect();
    expect(after.stream.responses[0]).toMatchObject({ typeUrl: CLUSTER, versionInfo: before.clusters.versionInfo });
    expect(namesOf(after.clusters)).toEqual(CLUSTERS);
    expect(namesOf(after.listeners)).toEqual(LISTENERS);
    // The grace timer was cancelled by the reconnect: the served session outlives it.
    harness.clock.increment(10_000);
    expect(harness.cp.session(NODE)?.state).toBe('serving');
  });

  it('evicts the session after the grace, and serves a new connection from a fresh session', async () => {
    const before = await connect();
    await breakStream(before.stream);
    harness.clock.increment(10_000);

    expect(harness.cp.session(NODE)).toBeUndefined();
    expect((await getSession(harness, NODE)).status).toBe(404);
    expect(harness.cp.listSessions()).toEqual([]);

    const after = await connect();
    expect(namesOf(after.stream.responses[0]!)).toEqual(CLUSTERS);
    expect(namesOf(after.listeners)).toEqual(LISTENERS);
    const { body } = await getSession(harness, NODE);
    expect(body.transitions.map((transition) => [transition.event, transition.to])).toEqual([['stream.opened', 'serving']]);
  });
});

describe('a Dataplane deleted while its node is served', () => {
  it('ends the stream with NOT_FOUND naming the dataplane, sends nothing after the delete, and drops the session', async () => {
    const { stream } = await connect();
    stream.send({ typeUrl: ENDPOINT, resourceNames: ['backend'] });
    await stream.nextResponse(3);
    const sentBefore = stream.responses.length;

    await harness.cp.delete({ type: 'Dataplane', mesh: 'default', name: 'web-1' });
    const end = await stream.ending();
    expect(end.code).toBe(status.NOT_FOUND);
    expect(end.details).toContain('web-1');
    expect(end.details).toContain(NODE);
    expect(stream.responses).toHaveLength(sentBefore);
    expect(harness.cp.session(NODE)).toBeUndefined();
    expect((await getSession(harness, NODE)).status).toBe(404);
  });

  it('keeps a node whose Dataplane does not exist yet waiting, then serves it once created (DESIGN §6)', async () => {
    const stream = harness.streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-2' });
    await sessionIn(harness.cp, 'default.web-2', 'awaiting-snapshot');
    expect((await getSession(harness, 'default.web-2')).body.error?.code).toBe('CHANCERY_MESH_DATAPLANE_NOT_FOUND');
    harness.watchdog.next();
    expect(harness.cp.session('default.web-2')?.state).toBe('awaiting-snapshot');

    await harness.cp.apply(envoyDataplane('web-2'));
    const clusters = await stream.nextResponse();
    expect(namesOf(clusters)).toEqual(CLUSTERS);
    expect(stream.responses).toHaveLength(1);
  });
});

describe('nothing is written to a stream after it closes (kuma#13626)', () => {
  it('writes nothing to a closed stream on store changes or ticks, and closes its writer', async () => {
    const sends = vi.spyOn(StreamWriter.prototype, 'send');
    const { stream } = await connect();
    const writers = new Set(sends.mock.contexts as StreamWriter[]);
    expect(writers.size).toBe(1);
    sends.mockClear();

    await breakStream(stream);
    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    await harness.cp.apply(backendDataplane('backend-2', 10004));
    harness.watchdog.next();

    expect(sends).not.toHaveBeenCalled();
    for (const writer of writers) expect(writer.open).toBe(false);
    expect(harness.cp.session(NODE)?.state).toBe('disconnected');

    harness.clock.increment(10_000);
    expect(harness.cp.session(NODE)).toBeUndefined();
    expect(sends).not.toHaveBeenCalled();
  });

  it('writes nothing to a stream the server ended, when a newer one took over', async () => {
    const sends = vi.spyOn(StreamWriter.prototype, 'send');
    const first = await connect();
    const [firstWriter] = new Set(sends.mock.contexts as StreamWriter[]);
    const second = await connect();
    await first.stream.ending();
    sends.mockClear();

    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    await settle(second.stream);
    harness.watchdog.next();
    expect(firstWriter?.open).toBe(false);
    expect(sends.mock.contexts.filter((writer) => writer === firstWriter)).toEqual([]);
    expect(sends).toHaveBeenCalled();
  });
});
