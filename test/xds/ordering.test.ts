import { afterEach, describe, expect, it } from 'vitest';
import type { DecodedResponse } from '../../src/xds/decode.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, type TypeUrl } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { envoyHandshake } from '../support/envoy-handshake.js';
import { backendDataplane, clientDataplane, startHarness, type Harness } from '../support/harness.js';
import { OpenStreams } from '../support/open-streams.js';
import { BACKEND, envoyDataplane, namesOf, settle } from './fixtures.js';

const ENVOY = 'default.web-1';

const harnesses: Harness[] = [];
const streams = new OpenStreams();
afterEach(async () => {
  streams.closeAll();
  for (const harness of harnesses.splice(0)) await harness.stop();
});

async function start(instanceId = 'test'): Promise<Harness> {
  const harness = await startHarness({ instanceId });
  harnesses.push(harness);
  return harness;
}

const open = (harness: Harness): AdsStream => streams.sotw({ address: harness.xds });

const typesOf = (responses: readonly DecodedResponse[]) => responses.map((response) => response.typeUrl);

describe('I5 make before break: CDS, then EDS, then LDS, then RDS on one stream', () => {
  it('pushes a change that adds a cluster as CDS, then EDS, then LDS', async () => {
    const harness = await start();
    await harness.cp.apply(BACKEND);
    await harness.cp.apply(envoyDataplane('web-1'));
    const stream = open(harness);
    const { endpoints } = await envoyHandshake(stream, ENVOY);

    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const sent = await settle(stream);
    expect(typesOf(sent)).toEqual([CLUSTER, ENDPOINT, LISTENER]);
    expect(namesOf(sent[0]!)).toEqual(['backend', 'localhost:9002', 'payments']);
    // The EDS Envoy subscribed to did not change; it is re-sent so the changed clusters finish warming.
    expect(sent[1]!.versionInfo).toBe(endpoints.versionInfo);
    expect(namesOf(sent[2]!)).toEqual(['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001', 'outbound:127.0.0.1:20002']);

    // Envoy then names the new cluster's endpoints; the service has none yet, and says so.
    stream.ack(sent[1]!, ['backend', 'payments']);
    const both = await stream.nextResponse();
    expect(both.typeUrl).toBe(ENDPOINT);
    expect(both.resources).toEqual([
      expect.objectContaining({ cluster_name: 'backend' }),
      { '@type': ENDPOINT, cluster_name: 'payments' },
    ]);
  });

  it('re-sends EDS after every CDS change, and sends only EDS when only endpoints change', async () => {
    const harness = await start();
    await harness.cp.apply(BACKEND);
    await harness.cp.apply(envoyDataplane('web-1'));
    const stream = open(harness);
    const { endpoints } = await envoyHandshake(stream, ENVOY);

    let outbound = [{ port: 20001, service: 'backend' }];
    for (const [port, service] of [[20002, 'payments'], [20003, 'ledger']] as const) {
      outbound = [...outbound, { port, service }];
      await harness.cp.apply(envoyDataplane('web-1', { outbound }));
      const sent = await settle(stream);
      expect(typesOf(sent)).toEqual([CLUSTER, ENDPOINT, LISTENER]);
      expect(sent[1]!.versionInfo).toBe(endpoints.versionInfo);
      for (const response of sent) stream.ack(response, response.typeUrl === ENDPOINT ? ['backend'] : []);
    }

    await harness.cp.apply(backendDataplane('backend-2', 10004));
    const sent = await settle(stream);
    expect(typesOf(sent)).toEqual([ENDPOINT]);
    expect(sent[0]!.resources[0]).toMatchObject({ endpoints: [{ lb_endpoints: [{}, {}] }] });
  });

  it('pushes the four resources of a service that appears in CDS, EDS, LDS, RDS order', async () => {
    const harness = await start();
    await harness.cp.apply(BACKEND);
    await harness.cp.apply(clientDataplane('client-1'));
    const stream = open(harness);
    // Asked for in the opposite order, before the service exists.
    stream.send({ typeUrl: ROUTE, resourceNames: ['late'], nodeId: 'default.client-1' });
    for (const typeUrl of [LISTENER, ENDPOINT, CLUSTER] satisfies TypeUrl[]) stream.send({ typeUrl, resourceNames: ['late'] });
    // A request that gets an answer at once shows nothing was sent for `late`.
    stream.send({ typeUrl: LISTENER, resourceNames: ['late', 'backend'] });
    const backend = await stream.nextResponse();
    expect(namesOf(backend)).toEqual(['backend']);
    stream.ack(backend, ['late', 'backend']);

    await harness.cp.apply(backendDataplane('late-1', 10005, 'late'));
    await stream.nextResponse(5);
    const sent = stream.responses.slice(1);
    expect(typesOf(sent)).toEqual([CLUSTER, ENDPOINT, LISTENER, ROUTE]);
    expect(sent.map(namesOf)).toEqual([['late'], ['late'], ['backend', 'late'], ['late']]);
  });
});

describe('nonces (xDS: every response carries one; it is valid only on its stream)', () => {
  it('gives every response on a stream a nonce of its own', async () => {
    const harness = await start();
    await harness.cp.apply(BACKEND);
    await harness.cp.apply(envoyDataplane('web-1'));
    const stream = open(harness);
    await envoyHandshake(stream, ENVOY);
    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    await harness.cp.apply(backendDataplane('backend-2', 10004));
    await settle(stream);
    await settle(stream);

    const nonces = stream.responses.map((response) => response.nonce);
    expect(nonces.length).toBeGreaterThanOrEqual(9);
    for (const nonce of nonces) expect(nonce).not.toBe('');
    expect(new Set(nonces).size).toBe(nonces.length);
  });
});

describe('I6 deterministic versions: content hashes, the same on every instance', () => {
  async function twoInstances() {
    const a = await start('instance-a');
    const b = await start('instance-b');
    await a.cp.apply(BACKEND);
    await a.cp.apply(envoyDataplane('web-1'));
    // The other instance got the same resources in another order, at other revisions.
    await b.cp.apply(envoyDataplane('web-1'));
    await b.cp.apply(clientDataplane('client-1'));
    await b.cp.apply(BACKEND);
    return { a, b };
  }

  it('gives the same version per type for the same configuration on two control planes', async () => {
    const { a, b } = await twoInstances();
    const onA = await envoyHandshake(open(a), ENVOY);
    const onB = await envoyHandshake(open(b), ENVOY);

    expect(onA.clusters.controlPlane).toBe('instance-a');
    expect(onB.clusters.controlPlane).toBe('instance-b');
    for (const type of ['clusters', 'endpoints', 'listeners'] as const) {
      expect(onA[type].versionInfo).not.toBe('');
      expect(onB[type].versionInfo).toBe(onA[type].versionInfo);
      expect(onB[type].resources).toEqual(onA[type].resources);
    }
  });

  it('does not re-send a node moving to another instance the wildcard versions it holds', async () => {
    const { a, b } = await twoInstances();
    const held = await envoyHandshake(open(a), ENVOY);

    const moved = open(b);
    moved.send({ typeUrl: CLUSTER, nodeId: ENVOY, versionInfo: held.clusters.versionInfo });
    moved.send({ typeUrl: LISTENER, versionInfo: held.listeners.versionInfo });
    expect(await settle(moved)).toEqual([]);

    // What it does not hold yet is sent, complete.
    await b.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const sent = await settle(moved);
    expect(typesOf(sent)).toEqual([CLUSTER, LISTENER]);
    expect(namesOf(sent[0]!)).toEqual(['backend', 'localhost:9002', 'payments']);
    expect(namesOf(sent[1]!)).toHaveLength(3);
  });
});
