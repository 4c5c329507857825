import { Client, credentials, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER, LISTENER } from '../../src/xds/type-urls.js';
import { AdsStream, DeltaStream } from '../support/ads-client.js';
import { startHarness, type Harness } from '../support/harness.js';
import { OpenStreams } from '../support/open-streams.js';
import { discoveryRequestBytes, nestedStruct, wideStruct } from '../support/xds-wire.js';
import { BACKEND, envoyDataplane, namesOf } from './fixtures.js';

const LIMITS = {
  maxNodeIdLength: 64,
  maxNodeMetadataBytes: 1_024,
  maxNodeMetadataDepth: 4,
  maxResourceNames: 10,
  maxRequestBytes: 8_192,
  maxStreamsPerConnection: 3,
  maxRequestsPerSecond: 5,
};

let harness: Harness;
const opened = new OpenStreams(() => harness.xds);
beforeAll(async () => {
  // The clock the request budget reads never moves: no request is ever refunded by waiting.
  harness = await startHarness({ xdsLimits: LIMITS, now: () => 1_000_000 });
  await harness.cp.apply(BACKEND);
  await harness.cp.apply(envoyDataplane('web-1'));
  await harness.cp.apply(envoyDataplane('web-2'));
});
afterAll(async () => {
  opened.closeAll();
  await harness.stop();
});

/** A client with a connection of its own: grpc-js clients to one address otherwise share one. */
function connection(): Client {
  return new Client(harness.xds, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
}

/** A SotW stream on `client`'s connection, by default one of its own. */
const open = (client = connection()): AdsStream => opened.track(new AdsStream(client));

/** A well-behaved Envoy's first exchange: it is served its clusters, whatever was refused before. */
async function servedClusters(): Promise<string[]> {
  const stream = open();
  stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1' });
  const clusters = namesOf(await stream.nextResponse());
  stream.close();
  return clusters;
}

const revision = () => harness.cp.store.projection.revision;

describe('xDS request limits: each ends the stream with a status and a short reason (issue 11)', () => {
  it.each([
    {
      limit: 'node id length',
      request: () => discoveryRequestBytes({ typeUrl: CLUSTER, nodeId: `default.${'n'.repeat(100)}` }),
      code: status.RESOURCE_EXHAUSTED,
      details: 'node.id has 108 characters; at most 64 are accepted, and a <mesh>.<name> has at most 127',
    },
    {
      limit: 'node metadata size',
      request: () => discoveryRequestBytes({ typeUrl: CLUSTER, nodeId: 'default.web-1', metadata: wideStruct(2_000) }),
      code: status.RESOURCE_EXHAUSTED,
      details: /^node\.metadata is 20\d\d bytes; at most 1024 are accepted$/,
    },
    {
      limit: 'node metadata depth',
      request: () => discoveryRequestBytes({ typeUrl: CLUSTER, nodeId: 'default.web-1', metadata: nestedStruct(5) }),
      code: status.RESOURCE_EXHAUSTED,
      details: 'node.metadata nests deeper than 4 levels',
    },
    {
      limit: 'resource names per request',
      request: () => discoveryRequestBytes({ typeUrl: CLUSTER, nodeId: 'default.web-1', resourceNames: Array.from({ length: 11 }, (_, i) => `c${i}`) }),
      code: status.RESOURCE_EXHAUSTED,
      details: 'resource_names lists 11 names; at most 10 are accepted in one request',
    },
    {
      limit: 'request message size (grpc-js)',
      request: () => discoveryRequestBytes({ typeUrl: CLUSTER, nodeId: 'default.web-1', resourceNames: ['x'.repeat(9_000)] }),
      code: status.RESOURCE_EXHAUSTED,
      details: /^Received message larger than max \(\d+ vs 8192\)$/,
    },
  ])('refuses a request over the $limit, with nothing stored and the node served afterwards', async ({ request, code, details }) => {
    const before = revision();
    const stream = open();
    stream.sendBytes(request());
    const end = await stream.ending();
    expect(end.code).toBe(code);
    if (typeof details === 'string') expect(end.details).toBe(details);
    else expect(end.details).toMatch(details);
    expect(stream.responses).toEqual([]);
    expect(revision()).toBe(before);
    expect(await servedClusters()).toEqual(['backend', 'localhost:9002']);
  });

  it('accepts metadata within the limits, as an Envoy sends it', async () => {
    const stream = open();
    stream.sendBytes(discoveryRequestBytes({ typeUrl: CLUSTER, nodeId: 'default.web-1', metadata: nestedStruct(4) }));
    expect(namesOf(await stream.nextResponse())).toEqual(['backend', 'localhost:9002']);
  });

  it('ends a stream sending more requests than a second allows, after serving the burst', async () => {
    const stream = open();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1' });
    const clusters = await stream.nextResponse();
    stream.ack(clusters);
    stream.send({ typeUrl: LISTENER });
    const listeners = await stream.nextResponse();
    stream.ack(listeners);
    // Four requests so far; the fifth is within the burst, the sixth is one too many.
    stream.send({ typeUrl: LISTENER, versionInfo: listeners.versionInfo, responseNonce: listeners.nonce });
    stream.send({ typeUrl: LISTENER, versionInfo: listeners.versionInfo, responseNonce: listeners.nonce });
    const end = await stream.ending();
    expect(end).toEqual({ code: status.RESOURCE_EXHAUSTED, details: 'more than 5 requests in a second on this stream' });
  });

  it('refuses a stream past the streams one connection may have, and takes one again once another closes', async () => {
    const client = connection();
    const nodes = ['default.web-1', 'default.web-2', 'default.backend-1'];
    const streams = nodes.map(() => open(client));
    streams.forEach((stream, i) => stream.send({ typeUrl: CLUSTER, nodeId: nodes[i] }));
    await Promise.all(streams.map((stream) => stream.nextResponse()));
    const extra = open(client);
    expect(await extra.ending()).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      details: 'this connection has 3 streams open, the most one connection may have',
    });
    // Another connection is not affected.
    expect(await servedClusters()).toEqual(['backend', 'localhost:9002']);

    // One of the three ends (the server refuses its next message): the connection may open another.
    streams[1]!.sendBytes(Uint8Array.from([0xff]));
    expect((await streams[1]!.ending()).code).toBe(status.INVALID_ARGUMENT);
    const again = open(client);
    again.send({ typeUrl: CLUSTER, nodeId: 'default.web-2' });
    expect(namesOf(await again.nextResponse())).toEqual(['backend', 'localhost:9002']);
  });
});

describe('the same limits over Delta', () => {
  const delta = (): DeltaStream => opened.track(new DeltaStream(connection()));

  it.each([
    ['resource_names_subscribe', { subscribe: Array.from({ length: 11 }, (_, i) => `svc-${i}`) }],
    ['resource_names_unsubscribe', { unsubscribe: Array.from({ length: 11 }, (_, i) => `svc-${i}`) }],
    ['initial_resource_versions', { initialVersions: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`svc-${i}`, 'v1'])) }],
  ])('ends a stream whose %s lists more names than the limit, with RESOURCE_EXHAUSTED', async (field, request) => {
    const stream = delta();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1', ...request });
    const end = await stream.ending();
    expect(end).toEqual({ code: status.RESOURCE_EXHAUSTED, details: `${field} lists 11 names; at most 10 are accepted in one request` });
    expect(stream.responses).toEqual([]);
  });

  it('ends a stream whose initial_resource_versions holds a version no store can keep, naming the resource', async () => {
    const stream = delta();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1', initialVersions: { backend: 'v\u0000' } });
    const end = await stream.ending();
    expect(end.code).toBe(status.INVALID_ARGUMENT);
    expect(end.details).toMatch(/^initial_resource_versions\["backend"\] /);
  });
});
