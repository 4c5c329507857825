import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { CLUSTER, LISTENER } from '../../src/xds/type-urls.js';
import { harnessFor } from '../support/harness-for.js';
import { BACKEND, callStatus, envoyDataplane, getSession, namesOf, unaryStatus } from './fixtures.js';

// A type Chancery does not serve: the runtime layers of RTDS.
const RUNTIME = 'type.googleapis.com/envoy.service.runtime.v3.Runtime';

const harness = harnessFor({ resources: [BACKEND, envoyDataplane('web-1')] }, 'all');

describe('the node is read from the first request only (xDS "node only on the first request")', () => {
  it('serves a stream whose later requests carry no node', async () => {
    const stream = harness.streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1' });
    const clusters = await stream.nextResponse();
    stream.ack(clusters);
    stream.send({ typeUrl: LISTENER });
    const listeners = await stream.nextResponse();
    expect(listeners.typeUrl).toBe(LISTENER);
    expect(namesOf(listeners)).toEqual(['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001']);
    expect(harness.cp.session('default.web-1')?.state).toBe('serving');
  });

  it('ends with PERMISSION_DENIED a stream whose later request names another node, sending that node nothing', async () => {
    const stream = harness.streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.backend-1' });
    await stream.nextResponse();
    stream.send({ typeUrl: LISTENER, nodeId: 'default.web-1' });
    const end = await stream.ending();
    expect(end.code).toBe(status.PERMISSION_DENIED);
    expect(end.details).toMatch(/node id cannot change on a stream: it opened as default\.backend-1, then sent default\.web-1/);
    expect(stream.responses.map((response) => response.typeUrl)).toEqual([CLUSTER]);
    expect(harness.cp.session('default.backend-1')?.state).toBe('disconnected');
    expect(harness.cp.refusals().recent[0]).toMatchObject({ node: 'default.backend-1', code: 'PERMISSION_DENIED', reason: 'node-changed' });
  });

  it('ends a stream whose first request has no node with INVALID_ARGUMENT saying so', async () => {
    const stream = harness.streams.sotw();
    stream.send({ typeUrl: CLUSTER });
    const end = await stream.ending();
    expect(end.code).toBe(status.INVALID_ARGUMENT);
    expect(end.details).toMatch(/first DiscoveryRequest.*node/);
    expect(stream.responses).toEqual([]);
  });

  it.each(['nodot', 'Bad.Name', 'default.', 'default.UPPER'])('ends a stream from node id %j with INVALID_ARGUMENT naming the node', async (node) => {
    const stream = harness.streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: node });
    const end = await stream.ending();
    expect(end.code).toBe(status.INVALID_ARGUMENT);
    expect(end.details).toContain(`"${node}"`);
    expect(end.details).toContain('<mesh>.<name>');
    expect(stream.responses).toEqual([]);
    // The refused node leaves no session behind (I3).
    expect(harness.cp.session(node)).toBeUndefined();
    // The API refuses the id itself: no session can have it (400 CHANCERY_API_INVALID_NAME).
    expect((await getSession(harness, node)).status).toBe(400);
  });
});

describe('an unsupported variant is refused with a gRPC status, never accepted and left silent', () => {
  it('ends a stream whose first request asks for an unsupported type URL, naming it', async () => {
    const stream = harness.streams.sotw();
    stream.send({ typeUrl: RUNTIME, nodeId: 'default.web-1' });
    const end = await stream.ending();
    expect(end.code).toBe(status.INVALID_ARGUMENT);
    expect(end.details).toContain(RUNTIME);
    expect(end.details).toContain(CLUSTER);
  });

  it('ends a serving stream that asks for an unsupported type URL, naming it and the node', async () => {
    const stream = harness.streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.backend-1' });
    await stream.nextResponse();
    stream.send({ typeUrl: RUNTIME, resourceNames: ['cert'] });
    const end = await stream.ending();
    expect(end.code).toBe(status.INVALID_ARGUMENT);
    expect(end.details).toContain(RUNTIME);
    expect(end.details).toContain('default.backend-1');
  });

  it.each([
    ['envoy.service.listener.v3.ListenerDiscoveryService', 'StreamListeners'],
    ['envoy.service.listener.v3.ListenerDiscoveryService', 'DeltaListeners'],
    ['envoy.service.cluster.v3.ClusterDiscoveryService', 'StreamClusters'],
    ['envoy.service.route.v3.RouteDiscoveryService', 'StreamRoutes'],
    ['envoy.service.endpoint.v3.EndpointDiscoveryService', 'StreamEndpoints'],
  ])('answers the per-type stream %s/%s with UNIMPLEMENTED naming it', async (service, method) => {
    const end = await callStatus(harness.xds, `/${service}/${method}`, { typeUrl: LISTENER, nodeId: 'default.web-1' });
    expect(end.code).toBe(status.UNIMPLEMENTED);
    expect(end.details).toContain(`${service}/${method}`);
    expect(end.details).toContain('StreamAggregatedResources');
    expect(end.details).toContain('DeltaAggregatedResources');
  });

  it('answers a per-type unary fetch (FetchListeners) with UNIMPLEMENTED naming it', async () => {
    const end = await unaryStatus(harness.xds, '/envoy.service.listener.v3.ListenerDiscoveryService/FetchListeners');
    expect(end.code).toBe(status.UNIMPLEMENTED);
    expect(end.details).toContain('ListenerDiscoveryService/FetchListeners');
  });
});
