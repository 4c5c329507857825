import { beforeEach, describe, expect, it } from 'vitest';
import type { DecodedDeltaResponse } from '../../src/xds/decode.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import type { DeltaStream } from '../support/ads-client.js';
import { backendDataplane, clientDataplane } from '../support/harness.js';
import { harnessFor } from '../support/harness-for.js';
import { BACKEND, envoyDataplane } from './fixtures.js';

/**
 * Delta xDS (DeltaAggregatedResources), rule by rule (reference/delta-xds.md), and the Delta
 * bugs other control planes shipped, each with a scripted client over real gRPC.
 */

const NODE = 'default.web-1';
const CLUSTERS = ['backend', 'localhost:9002'];

const harness = harnessFor({ resources: [BACKEND, envoyDataplane('web-1')] });
let stream: DeltaStream;
beforeEach(() => {
  stream = harness.streams.delta();
});

const names = (response: DecodedDeltaResponse) => response.resources.map((resource) => resource.name);

/**
 * Resolves with every response sent in answer to what was sent before: a request that needs an
 * answer (a name nobody serves, subscribed on RDS) is sent after, and everything that arrives
 * before its answer is returned. Requests on a stream are handled in order.
 */
async function answersBefore(barrier: string, on: DeltaStream = stream): Promise<DecodedDeltaResponse[]> {
  const from = on.responses.length;
  on.send({ typeUrl: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration', subscribe: [barrier] });
  await on.until(() => on.responses.slice(from).some((r) => r.removed.includes(barrier)), `the answer to barrier ${barrier}`);
  const all = on.responses.slice(from);
  return all.slice(0, all.findIndex((r) => r.removed.includes(barrier)));
}

async function connectClusters(): Promise<DecodedDeltaResponse> {
  stream.send({ typeUrl: CLUSTER, nodeId: NODE });
  const clusters = await stream.nextResponse();
  stream.ack(clusters);
  return clusters;
}

describe('Delta xDS, rule by rule', () => {
  it('answers a first request with both lists empty as the legacy wildcard: every cluster, each with its version, and a nonce', async () => {
    const clusters = await connectClusters();
    expect(clusters.typeUrl).toBe(CLUSTER);
    expect(names(clusters)).toEqual(CLUSTERS);
    expect(clusters.nonce).not.toBe('');
    expect(clusters.removed).toEqual([]);
    for (const resource of clusters.resources) expect(resource.version).toMatch(/^[\w-]{16}$/);
    expect(clusters.controlPlane).toBe('test');
    // ACKed, nothing is owed: nothing more comes.
    expect(await answersBefore('after-ack')).toEqual([]);
    const view = harness.cp.session(NODE)!;
    expect(view.stream?.protocol).toBe('delta');
    expect(view.types['CDS']?.acked?.nonce).toBe(clusters.nonce);
    expect(view.types['CDS']?.held).toEqual(Object.fromEntries(clusters.resources.map((r) => [r.name, r.version])));
  });

  it('answers an explicit * the same way', async () => {
    stream.send({ typeUrl: CLUSTER, nodeId: NODE, subscribe: ['*'] });
    expect(names(await stream.nextResponse())).toEqual(CLUSTERS);
  });

  it('answers the first wildcard request even when nothing of the type exists yet (go-control-plane PR#473)', async () => {
    await harness.cp.apply(clientDataplane('client'));
    stream.send({ typeUrl: LISTENER, nodeId: 'default.client' });
    const listeners = await stream.nextResponse();
    expect(listeners.resources).toEqual([]);
    expect(listeners.removed).toEqual([]);
    expect(listeners.nonce).not.toBe('');
  });

  it('sends a name subscribed again though the server thinks the client has it (go-control-plane#1450)', async () => {
    await connectClusters();
    stream.send({ typeUrl: ENDPOINT, subscribe: ['backend'] });
    const first = await stream.nextResponse();
    stream.ack(first);
    stream.send({ typeUrl: ENDPOINT, subscribe: ['backend'] });
    const again = await stream.nextResponse();
    expect(names(again)).toEqual(['backend']);
    expect(again.resources[0]?.version).toBe(first.resources[0]?.version);
  });

  it('answers nothing to an unsubscribe alone, and sends the name again when it is subscribed again (go-control-plane#583, istio#54563)', async () => {
    await connectClusters();
    stream.send({ typeUrl: ENDPOINT, subscribe: ['backend'] });
    stream.ack(await stream.nextResponse());
    stream.send({ typeUrl: ENDPOINT, unsubscribe: ['backend'] });
    expect(await answersBefore('after-unsubscribe')).toEqual([]);
    expect(harness.cp.session(NODE)?.types['EDS']?.held).toEqual({});
    stream.send({ typeUrl: ENDPOINT, subscribe: ['backend'] });
    expect(names(await stream.nextResponse())).toEqual(['backend']);
  });

  it('says at once that a name does not exist, keeps the subscription, and sends it when it appears (go-control-plane PR#488)', async () => {
    await connectClusters();
    stream.send({ typeUrl: ENDPOINT, subscribe: ['payments'] });
    const missing = await stream.nextResponse();
    expect(missing.resources).toEqual([]);
    expect(missing.removed).toEqual(['payments']);
    stream.ack(missing);
    await harness.cp.apply(backendDataplane('ledger-1', 10005, 'payments'));
    const appeared = await stream.nextResponse();
    expect(appeared.typeUrl).toBe(ENDPOINT);
    expect(names(appeared)).toEqual(['payments']);
    expect(appeared.removed).toEqual([]);
  });

  it('says again that a name does not exist when it is subscribed again (rule 3)', async () => {
    await connectClusters();
    stream.send({ typeUrl: ENDPOINT, subscribe: ['payments'] });
    stream.ack(await stream.nextResponse());
    stream.send({ typeUrl: ENDPOINT, subscribe: ['payments'] });
    const again = await stream.nextResponse();
    expect(again.resources).toEqual([]);
    expect(again.removed).toEqual(['payments']);
  });

  it('honours a subscription change that comes with a stale nonce (envoy#16659)', async () => {
    await connectClusters();
    stream.send({ typeUrl: ENDPOINT, subscribe: ['backend'], responseNonce: 'a-nonce-never-sent' });
    expect(names(await stream.nextResponse())).toEqual(['backend']);
  });

  it('tells an ACK from a NACK by error_detail alone, and does not send the refused version again', async () => {
    const clusters = await connectClusters();
    stream.send({ typeUrl: ENDPOINT, subscribe: ['backend'] });
    const endpoints = await stream.nextResponse();
    stream.send({ typeUrl: ENDPOINT, responseNonce: endpoints.nonce, errorDetail: { code: 3, message: 'rejected by the test' } });
    await answersBefore('after-nack');
    const view = harness.cp.session(NODE)!;
    expect(view.types['EDS']?.nacked).toMatchObject({ nonce: endpoints.nonce, message: 'rejected by the test' });
    expect(view.types['CDS']?.acked?.nonce).toBe(clusters.nonce);
    harness.watchdog.next();
    await harness.cp.apply(backendDataplane('other-1', 10007, 'other'));
    expect((await answersBefore('after-change')).filter((r) => r.typeUrl === ENDPOINT)).toEqual([]);
  });

  it('answers an unsubscribe from a name * still covers by sending it again', async () => {
    stream.send({ typeUrl: CLUSTER, nodeId: NODE, subscribe: ['*', 'backend'] });
    const clusters = await stream.nextResponse();
    // A response never carries one name twice, though both * and the name select it.
    expect(names(clusters)).toEqual(CLUSTERS);
    stream.ack(clusters);
    stream.send({ typeUrl: CLUSTER, unsubscribe: ['backend'] });
    const still = await stream.nextResponse();
    expect(names(still)).toEqual(['backend']);
    expect(still.removed).toEqual([]);
  });

  it('ends the legacy wildcard once a name is subscribed: after that, only named clusters come', async () => {
    await connectClusters();
    stream.send({ typeUrl: CLUSTER, subscribe: ['backend'] });
    const named = await stream.nextResponse();
    expect(names(named)).toEqual(['backend']);
    // The client stopped asking for localhost:9002 itself, as by an unsubscribe: nothing to remove.
    expect(named.removed).toEqual([]);
    expect(harness.cp.session(NODE)?.types['CDS']?.held).toEqual({ backend: named.resources[0]!.version });
    stream.ack(named);
    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const after = await answersBefore('after-new-cluster');
    expect(after.filter((r) => r.typeUrl === CLUSTER)).toEqual([]);
  });

  it('tells a subscribed name that stops existing it is removed, keeps the subscription, and sends it again when it reappears (rule 8)', async () => {
    const payments = backendDataplane('ledger-1', 10005, 'payments');
    await harness.cp.apply(payments);
    await connectClusters();
    stream.send({ typeUrl: ENDPOINT, subscribe: ['payments'] });
    const sent = await stream.nextResponse();
    expect(names(sent)).toEqual(['payments']);
    stream.ack(sent);

    await harness.cp.delete({ type: 'Dataplane', mesh: 'default', name: 'ledger-1' });
    const gone = await stream.nextResponse();
    expect([gone.typeUrl, names(gone), gone.removed]).toEqual([ENDPOINT, [], ['payments']]);
    stream.ack(gone);
    expect(harness.cp.session(NODE)?.types['EDS']?.subscription.names).toEqual(['payments']);

    await harness.cp.apply(payments);
    const back = await stream.nextResponse();
    expect([back.typeUrl, names(back), back.removed]).toEqual([ENDPOINT, ['payments'], []]);
    // The same endpoints as before, so the same version: sent because the node dropped it.
    expect(back.resources[0]?.version).toBe(sent.resources[0]?.version);
  });

  it('sends everything * covers again when * is subscribed again, though the client holds it all (go-control-plane#1450)', async () => {
    stream.send({ typeUrl: CLUSTER, nodeId: NODE, subscribe: ['*'] });
    const clusters = await stream.nextResponse();
    stream.ack(clusters);
    stream.send({ typeUrl: CLUSTER, subscribe: ['*'] });
    const again = await stream.nextResponse();
    expect(again.resources).toEqual(clusters.resources);
    expect(again.removed).toEqual([]);
  });

  it('answers nothing to an empty request once every name was unsubscribed: it is not a legacy wildcard (rule 5)', async () => {
    stream.send({ typeUrl: CLUSTER, nodeId: NODE, subscribe: ['backend'] });
    const named = await stream.nextResponse();
    expect(names(named)).toEqual(['backend']);
    stream.ack(named);
    stream.send({ typeUrl: CLUSTER, unsubscribe: ['backend'] });
    stream.send({ typeUrl: CLUSTER });
    expect(await answersBefore('after-empty')).toEqual([]);
    const cds = harness.cp.session(NODE)?.types['CDS'];
    expect([cds?.subscription, cds?.held]).toEqual([{ wildcard: false, names: [] }, {}]);
    // Nor does a new cluster reach it.
    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    expect((await answersBefore('after-new-cluster')).filter((r) => r.typeUrl === CLUSTER)).toEqual([]);
  });

  it('pushes a change as CDS, then EDS, then LDS, each with only what changed, and removes only what the node holds', async () => {
    await connectClusters();
    stream.send({ typeUrl: ENDPOINT, subscribe: ['backend', 'payments'] });
    const endpoints = await stream.nextResponse();
    expect(endpoints.removed).toEqual(['payments']);
    stream.ack(endpoints);
    stream.send({ typeUrl: LISTENER });
    const listeners = await stream.nextResponse();
    stream.ack(listeners);

    await harness.cp.apply(backendDataplane('ledger-1', 10005, 'payments'));
    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const pushed = await answersBefore('after-change');
    // The first write made payments' endpoints exist; the second added its cluster and listener.
    const order = pushed.map((r) => [r.typeUrl, names(r), r.removed]);
    expect(order).toEqual([
      [ENDPOINT, ['payments'], []],
      [CLUSTER, ['payments'], []],
      [ENDPOINT, ['payments'], []],
      [LISTENER, ['outbound:127.0.0.1:20002'], []],
    ]);
    for (const response of pushed) stream.ack(response);

    await harness.cp.apply(envoyDataplane('web-1'));
    const undone = await answersBefore('after-undo');
    expect(undone.map((r) => [r.typeUrl, names(r), r.removed])).toEqual([
      [CLUSTER, [], ['payments']],
      [LISTENER, [], ['outbound:127.0.0.1:20002']],
    ]);
  });
});

// Streams that hold alike share one held map and one set of names (delta-ledger.ts): what one
// is sent, or drops, must never reach the other.
describe('Delta nodes holding the same resources', () => {
  it('each keep their own: a cluster only one is sent, and an unsubscribe on one, leave the other as it was', async () => {
    await harness.cp.apply(envoyDataplane('web-2'));
    const other = harness.streams.delta();
    try {
      const connect = async (on: DeltaStream, node: string) => {
        on.send({ typeUrl: CLUSTER, nodeId: node });
        on.ack(await on.nextResponse());
        on.send({ typeUrl: ENDPOINT, subscribe: ['backend'] });
        on.ack(await on.nextResponse());
      };
      await connect(stream, NODE);
      await connect(other, 'default.web-2');
      const held = (node: string, type: string) => Object.keys(harness.cp.session(node)?.types[type]?.held ?? {});
      expect([held(NODE, 'CDS'), held('default.web-2', 'CDS')]).toEqual([CLUSTERS, CLUSTERS]);

      await harness.cp.apply(backendDataplane('ledger-1', 10005, 'payments'));
      await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
      const sent = (await answersBefore('after-payments')).filter((r) => r.typeUrl === CLUSTER);
      expect(sent.map(names)).toEqual([['payments']]);
      for (const response of sent) stream.ack(response);
      expect((await answersBefore('after-payments', other)).filter((r) => r.typeUrl === CLUSTER)).toEqual([]);
      expect([held(NODE, 'CDS'), held('default.web-2', 'CDS')]).toEqual([[...CLUSTERS, 'payments'].sort(), CLUSTERS]);

      other.send({ typeUrl: ENDPOINT, unsubscribe: ['backend'] });
      expect(await answersBefore('after-unsubscribe', other)).toEqual([]);
      expect([held(NODE, 'EDS'), held('default.web-2', 'EDS')]).toEqual([['backend'], []]);
      expect(harness.cp.session(NODE)?.types['EDS']?.subscription.names).toEqual(['backend']);
      await harness.cp.apply(backendDataplane('backend-2', 10006));
      const moved = (await answersBefore('after-endpoints')).filter((r) => r.typeUrl === ENDPOINT);
      expect(moved.map(names)).toEqual([['backend']]);
      expect((await answersBefore('after-endpoints', other)).filter((r) => r.typeUrl === ENDPOINT)).toEqual([]);
    } finally {
      other.close();
    }
  });
});

describe('a Delta client that comes back holding resources (initial_resource_versions)', () => {
  it('is sent only what differs, told what vanished, and keeps its wildcard (hashicorp/consul#12174, kmesh#415)', async () => {
    const clusters = await connectClusters();
    const held = Object.fromEntries(clusters.resources.map((r) => [r.name, r.version]));
    stream.close();
    await harness.cp.apply(envoyDataplane('web-1', { inbound: [{ port: 10002, servicePort: 9003, service: 'web' }] }));

    stream = harness.streams.delta();
    stream.send({ typeUrl: CLUSTER, nodeId: NODE, initialVersions: { ...held, ghost: 'an-old-version' } });
    const back = await stream.nextResponse();
    // backend is held at its current version: not sent. The app port moved: a new local cluster,
    // and the old one and the ghost are removed.
    expect(names(back)).toEqual(['localhost:9003']);
    expect(back.removed).toEqual(['ghost', 'localhost:9002']);
    stream.ack(back);
    // Still the wildcard: a cluster added later arrives.
    await harness.cp.apply(envoyDataplane('web-1', { inbound: [{ port: 10002, servicePort: 9003, service: 'web' }], outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const later = (await answersBefore('after-add')).filter((r) => r.typeUrl === CLUSTER);
    expect(later.map(names)).toEqual([['payments']]);
    const story = harness.cp.session(NODE)!.transitions;
    expect(story.some((t) => t.event === 'store.caughtUp')).toBe(true);
  });

  it('is sent again a name it holds at an old version, and not the names it holds at the current one (rule 6)', async () => {
    const clusters = await connectClusters();
    const local = clusters.resources.find((r) => r.name === 'localhost:9002')!;
    const backend = clusters.resources.find((r) => r.name === 'backend')!;
    stream.close();

    stream = harness.streams.delta();
    stream.send({ typeUrl: CLUSTER, nodeId: NODE, initialVersions: { backend: 'an-old-version', 'localhost:9002': local.version } });
    const back = await stream.nextResponse();
    expect(back.resources).toEqual([backend]);
    expect(back.removed).toEqual([]);
    expect(harness.cp.session(NODE)?.types['CDS']?.held).toEqual({ backend: backend.version, 'localhost:9002': local.version });
  });

  it.each([
    ['implied (both lists empty)', []],
    ['named (*)', ['*']],
  ])('keeps its LDS wildcard, %s, when it comes back holding listeners (hashicorp/consul#12174)', async (_, subscribe) => {
    await connectClusters();
    stream.send({ typeUrl: LISTENER });
    const listeners = await stream.nextResponse();
    stream.ack(listeners);
    const clusters = harness.cp.session(NODE)!.types['CDS']!.held!;
    stream.close();

    stream = harness.streams.delta();
    stream.send({ typeUrl: CLUSTER, nodeId: NODE, initialVersions: clusters });
    stream.send({ typeUrl: LISTENER, subscribe, initialVersions: Object.fromEntries(listeners.resources.map((r) => [r.name, r.version])) });
    const back = await answersBefore('on-return');
    expect(back.map((r) => [r.typeUrl, names(r), r.removed])).toEqual([
      [CLUSTER, [], []],
      [LISTENER, [], []],
    ]);
    for (const response of back) stream.ack(response);
    expect(harness.cp.session(NODE)?.types['LDS']?.subscription).toEqual({ wildcard: true, names: [] });
    // Still the wildcard: a listener added later arrives.
    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const later = (await answersBefore('after-add')).filter((r) => r.typeUrl === LISTENER);
    expect(later.map((r) => [names(r), r.removed])).toEqual([[['outbound:127.0.0.1:20002'], []]]);
  });

  it('never hears of a removal for a name it never held or asked for', async () => {
    await connectClusters();
    stream.send({ typeUrl: LISTENER });
    stream.ack(await stream.nextResponse());
    for (const outbound of [[{ port: 20003, service: 'a' }], [], [{ port: 20004, service: 'b' }], []]) {
      await harness.cp.apply(envoyDataplane('web-1', { outbound }));
    }
    const all = await answersBefore('after-churn');
    const held = new Set<string>([...CLUSTERS, 'inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001']);
    for (const response of all) {
      for (const name of response.removed) expect(held.has(name), `${name} removed but never held`).toBe(true);
      for (const name of response.removed) held.delete(name);
      for (const resource of response.resources) held.add(resource.name);
    }
  });
});
