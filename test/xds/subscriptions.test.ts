import { beforeEach, describe, expect, it } from 'vitest';
import type { DecodedResponse } from '../../src/xds/decode.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, type TypeUrl } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { backendDataplane, clientDataplane } from '../support/harness.js';
import { harnessFor } from '../support/harness-for.js';
import { BACKEND, envoyDataplane, getSession, namesOf, settle } from './fixtures.js';

const ENVOY = 'default.web-1';
const GRPC = 'default.client-1';
const ENVOY_LISTENERS = ['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001'];

const harness = harnessFor({ resources: [BACKEND, envoyDataplane('web-1'), clientDataplane('client-1')] });
let stream: AdsStream;
beforeEach(() => {
  stream = harness.streams.sotw();
});

/** A SotW request that ACKs `previous` (when given) and names `names`. */
function request(typeUrl: TypeUrl, names: readonly string[], previous?: DecodedResponse, nodeId?: string): void {
  stream.send({
    typeUrl,
    resourceNames: names,
    ...(previous && { versionInfo: previous.versionInfo, responseNonce: previous.nonce }),
    ...(nodeId && { nodeId }),
  });
}

describe('legacy wildcard: [] means * only until the client names a resource (xDS "resource_names")', () => {
  it('walks [] → [*, A] → [A] → []: all, all plus A, only A, then nothing at all', async () => {
    request(LISTENER, [], undefined, ENVOY);
    const all = await stream.nextResponse();
    expect(namesOf(all)).toEqual(ENVOY_LISTENERS);

    request(LISTENER, ['*', 'backend'], all);
    const allPlusA = await stream.nextResponse();
    expect(allPlusA.typeUrl).toBe(LISTENER);
    expect(namesOf(allPlusA)).toEqual(['backend', ...ENVOY_LISTENERS]);

    request(LISTENER, ['backend'], allPlusA);
    const onlyA = await stream.nextResponse();
    expect(onlyA.typeUrl).toBe(LISTENER);
    expect(namesOf(onlyA)).toEqual(['backend']);

    // Now [] is an unsubscription from everything: no response, and above all no empty LDS,
    // which would make the client delete every listener it has.
    request(LISTENER, [], onlyA);
    expect(await settle(stream)).toEqual([]);
    const { body } = await getSession(harness, ENVOY);
    expect(body.types.LDS?.subscription).toEqual({ wildcard: false, names: [] });

    // Its listeners changing is no longer its business.
    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'other' }] }));
    expect((await settle(stream)).filter((response) => response.typeUrl === LISTENER)).toEqual([]);

    // An explicit * subscribes it again.
    request(LISTENER, ['*'], onlyA);
    const again = await stream.nextResponse();
    expect(namesOf(again)).toEqual([...ENVOY_LISTENERS, 'outbound:127.0.0.1:20002']);
  });

  it('keeps an empty-list subscriber on the wildcard for as long as it never names a resource', async () => {
    request(CLUSTER, [], undefined, ENVOY);
    const first = await stream.nextResponse();
    request(CLUSTER, [], first);
    expect(await settle(stream)).toEqual([]);
    expect((await getSession(harness, ENVOY)).body.types.CDS?.subscription).toEqual({ wildcard: true, names: [] });
  });

  it('never sends one name twice when a wildcard subscriber also names one of its own resources', async () => {
    request(LISTENER, ['*', 'inbound:127.0.0.1:10002', 'backend'], undefined, ENVOY);
    const response = await stream.nextResponse();
    expect(namesOf(response)).toEqual(['backend', ...ENVOY_LISTENERS]);
  });
});

describe('named subscriptions, as gRPC clients make them (DESIGN §6)', () => {
  it('sends Listener, RouteConfiguration, Cluster and ClusterLoadAssignment named after the service', async () => {
    request(LISTENER, ['backend'], undefined, GRPC);
    const listener = await stream.nextResponse();
    expect(listener.typeUrl).toBe(LISTENER);
    expect(listener.resources).toEqual([
      expect.objectContaining({
        name: 'backend',
        api_listener: {
          api_listener: expect.objectContaining({ rds: expect.objectContaining({ route_config_name: 'backend' }) }),
        },
      }),
    ]);

    request(ROUTE, ['backend']);
    const route = await stream.nextResponse();
    expect(route.typeUrl).toBe(ROUTE);
    expect(route.resources).toEqual([
      expect.objectContaining({
        name: 'backend',
        virtual_hosts: [expect.objectContaining({ domains: ['*'], routes: [expect.objectContaining({ route: { cluster: 'backend' } })] })],
      }),
    ]);

    request(CLUSTER, ['backend']);
    const cluster = await stream.nextResponse();
    expect(cluster.typeUrl).toBe(CLUSTER);
    expect(cluster.resources).toEqual([
      expect.objectContaining({ name: 'backend', type: 'EDS', eds_cluster_config: expect.objectContaining({ service_name: 'backend' }) }),
    ]);

    request(ENDPOINT, ['backend']);
    const assignment = await stream.nextResponse();
    expect(assignment.typeUrl).toBe(ENDPOINT);
    expect(assignment.resources).toEqual([
      expect.objectContaining({
        cluster_name: 'backend',
        endpoints: [
          expect.objectContaining({
            // gRPC NACKs a locality without `locality` and ignores one without a weight.
            locality: expect.objectContaining({ region: 'default' }),
            load_balancing_weight: 1,
            lb_endpoints: [expect.objectContaining({ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 10001 } } } })],
          }),
        ],
      }),
    ]);
  });

  it('sends nothing for a name that does not exist yet, then sends it as soon as it exists', async () => {
    request(LISTENER, ['late'], undefined, GRPC);
    request(CLUSTER, ['late']);
    request(ENDPOINT, ['late']);
    expect(await settle(stream)).toEqual([]);
    expect(harness.cp.session(GRPC)?.state).toBe('serving');

    await harness.cp.apply(backendDataplane('late-1', 10005, 'late'));
    const sent = await settle(stream);
    // In make-before-break order, each carrying just the name asked for.
    expect(sent.map((response) => response.typeUrl)).toEqual([CLUSTER, ENDPOINT, LISTENER]);
    for (const response of sent) expect(namesOf(response)).toEqual(['late']);
  });

  it('keeps a client whose mesh has no service at all waiting, sending nothing, until the named service exists', async () => {
    await harness.cp.delete({ type: 'Dataplane', mesh: 'default', name: 'backend-1' });
    await harness.cp.delete({ type: 'Dataplane', mesh: 'default', name: 'web-1' });
    request(LISTENER, ['late'], undefined, GRPC);
    // No resources at all for this node: nothing to push, and it waits (I1, DESIGN §6).
    await harness.cp.apply(backendDataplane('late-1', 10005, 'late'));
    const listener = await stream.nextResponse();
    expect(listener.typeUrl).toBe(LISTENER);
    expect(namesOf(listener)).toEqual(['late']);
  });
});

describe('a resource newly subscribed to is sent even when unchanged (xDS; go-control-plane#431)', () => {
  it('re-sends an unchanged ClusterLoadAssignment after unsubscribe and resubscribe', async () => {
    request(ENDPOINT, ['backend'], undefined, GRPC);
    const first = await stream.nextResponse();
    request(ENDPOINT, [], first);
    expect(await settle(stream)).toEqual([]);

    request(ENDPOINT, ['backend'], first);
    const again = await stream.nextResponse();
    expect(again.typeUrl).toBe(ENDPOINT);
    expect(again.versionInfo).toBe(first.versionInfo);
    expect(again.nonce).not.toBe(first.nonce);
    expect(namesOf(again)).toEqual(['backend']);
  });

  it('sends a Listener the client had been sent before when it names it again', async () => {
    request(LISTENER, ['backend', 'web'], undefined, GRPC);
    const both = await stream.nextResponse();
    request(LISTENER, ['web'], both);
    const web = await stream.nextResponse();
    expect(namesOf(web)).toEqual(['web']);
    request(LISTENER, ['backend', 'web'], web);
    const again = await stream.nextResponse();
    expect(namesOf(again)).toEqual(['backend', 'web']);
    expect(again.versionInfo).toBe(both.versionInfo);
  });
});

describe('LDS and CDS responses carry the full set for the subscription (xDS "Grouping")', () => {
  it('sends every listener and cluster of a wildcard subscriber when one is added', async () => {
    request(CLUSTER, [], undefined, ENVOY);
    const clusters = await stream.nextResponse();
    expect(namesOf(clusters)).toEqual(['backend', 'localhost:9002']);
    stream.ack(clusters);
    request(LISTENER, []);
    const listeners = await stream.nextResponse();
    stream.ack(listeners);

    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'other' }] }));
    const sent = await settle(stream);
    const cds = sent.find((response) => response.typeUrl === CLUSTER);
    const lds = sent.find((response) => response.typeUrl === LISTENER);
    expect(namesOf(cds!)).toEqual(['backend', 'localhost:9002', 'other']);
    expect(namesOf(lds!)).toEqual([...ENVOY_LISTENERS, 'outbound:127.0.0.1:20002']);
  });

  it('sends every named cluster still subscribed when one of them changes or goes', async () => {
    request(CLUSTER, ['backend', 'web'], undefined, GRPC);
    const both = await stream.nextResponse();
    expect(namesOf(both)).toEqual(['backend', 'web']);
    stream.ack(both, ['backend', 'web']);

    // The last Dataplane serving `web` goes: the response carries the rest, so the client deletes only `web`.
    await harness.cp.delete({ type: 'Dataplane', mesh: 'default', name: 'web-1' });
    const sent = (await settle(stream)).filter((response) => response.typeUrl === CLUSTER);
    expect(sent.map(namesOf)).toEqual([['backend']]);
  });
});
