import v8 from 'node:v8';
import vm from 'node:vm';
import { Client, credentials, Metadata, status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodeResponse, type DecodedResponse } from '../../src/xds/decode.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import { encodeRequest } from '../../src/xds/xds-request.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import type { AdsStream } from '../support/ads-client.js';
import { envoyHandshake, type Handshake } from '../support/envoy-handshake.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { OpenStreams } from '../support/open-streams.js';
import { BACKEND, envoyDataplane, getSession, namesOf, sessionIn, settle } from '../xds/fixtures.js';
import { budget } from '../support/budget.js';

/**
 * kuma#2171 (DESIGN §1): on disconnect Kuma wrote an empty snapshot as a placeholder; the
 * node reconnecting to the same instance was answered with it at once, and Envoy deleted
 * every listener and cluster until the next refresh tick. The cache never evicted either.
 */

// Every generated Snapshot passes through here, on its way to a session or generated ahead of its
// node (`pregenerate`, which drops it); the churn test keeps WeakRefs to a sample of them to see
// that eviction lets them go (I3).
const served = vi.hoisted(() => ({ every: 0, seen: 0, refs: [] as WeakRef<object>[] }));
vi.mock('../../src/mesh/index.js', async (importOriginal) => {
  const mesh = await importOriginal<typeof import('../../src/mesh/index.js')>();
  return {
    ...mesh,
    generate: (...args: Parameters<typeof mesh.generate>) => {
      const result = mesh.generate(...args);
      if (result.ok && served.every > 0 && served.seen++ % served.every === 0) served.refs.push(new WeakRef(result.snapshot));
      return result;
    },
  };
});

const NODE = 'default.web-1';
const CLUSTERS = ['backend', 'localhost:9002'];
const LISTENERS = ['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001'];

let harness: Harness | undefined;
const streams = new OpenStreams();
afterEach(async () => {
  streams.closeAll();
  await harness?.stop();
  harness = undefined;
});

async function start(instanceId = 'test'): Promise<Harness> {
  const started = await startHarness({ instanceId });
  await started.cp.apply(BACKEND);
  await started.cp.apply(envoyDataplane('web-1'));
  return started;
}

/** Connects as a freshly started Envoy does over ADS (`envoyHandshake`) to `target`. */
async function envoyConnect(target: Harness): Promise<{ stream: AdsStream } & Handshake> {
  const stream = streams.sotw({ address: target.xds });
  return { stream, ...(await envoyHandshake(stream, NODE)) };
}

/** I1 on the wire: no LDS or CDS response on any stream ever held less than the node's configuration. */
function expectNeverLessThanConfigured(all: readonly AdsStream[], clusters = CLUSTERS, listeners = LISTENERS): void {
  for (const stream of all) {
    for (const response of stream.responses) {
      if (response.typeUrl === CLUSTER) expect(namesOf(response)).toEqual(clusters);
      if (response.typeUrl === LISTENER) expect(namesOf(response)).toEqual(listeners);
    }
  }
}

describe('kuma#2171: a node reconnecting to the same instance is first sent its real, complete configuration', () => {
  const moments: [string, (h: Harness) => void, 'disconnected' | 'evicted'][] = [
    ['before the refresh tick', () => undefined, 'disconnected'],
    ['after a refresh tick', (h) => h.watchdog.next(), 'disconnected'],
    ['just before the eviction grace ends', (h) => h.clock.increment(9_999), 'disconnected'],
    ['after the grace, once its session was evicted', (h) => h.clock.increment(10_000), 'evicted'],
  ];

  it.each(moments)('when it reconnects %s', async (_moment, wait, stateMeanwhile) => {
    const h = (harness = await start());
    const first = await envoyConnect(h);
    first.stream.close();
    await sessionIn(h.cp, NODE, 'disconnected');
    wait(h);
    if (stateMeanwhile === 'evicted') expect((await getSession(h, NODE)).status).toBe(404);
    else expect(h.cp.session(NODE)?.state).toBe('disconnected');

    const second = await envoyConnect(h);
    const [firstResponse] = second.stream.responses;
    expect(firstResponse?.typeUrl).toBe(CLUSTER);
    expect(namesOf(firstResponse!)).toEqual(CLUSTERS);
    expect(firstResponse?.versionInfo).toBe(first.clusters.versionInfo);
    expect(namesOf(second.listeners)).toEqual(LISTENERS);
    expect(second.listeners.versionInfo).toBe(first.listeners.versionInfo);
    expect(second.endpoints.resources).toEqual(first.endpoints.resources);
    // No tick happened in between, and none was needed (I2).
    expect(h.cp.session(NODE)?.state).toBe('serving');
    expectNeverLessThanConfigured([first.stream, second.stream]);
  });

  it('first sends the new configuration to a node whose Dataplane changed while it was away', async () => {
    const h = (harness = await start());
    const first = await envoyConnect(h);
    first.stream.close();
    await sessionIn(h.cp, NODE, 'disconnected');
    await h.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));

    const second = await envoyConnect(h);
    expect(namesOf(second.stream.responses[0]!)).toEqual([...CLUSTERS, 'payments']);
    expect(namesOf(second.listeners)).toEqual([...LISTENERS, 'outbound:127.0.0.1:20002']);
  });

  it('sends a reconnecting Envoy that says which versions it holds nothing it holds, and nothing empty', async () => {
    const h = (harness = await start());
    const first = await envoyConnect(h);
    first.stream.close();
    await sessionIn(h.cp, NODE, 'disconnected');
    h.watchdog.next();

    const stream = streams.sotw({ address: h.xds });
    stream.send({ typeUrl: CLUSTER, nodeId: NODE, versionInfo: first.clusters.versionInfo });
    stream.send({ typeUrl: ENDPOINT, resourceNames: ['backend'], versionInfo: first.endpoints.versionInfo });
    stream.send({ typeUrl: LISTENER, versionInfo: first.listeners.versionInfo });
    const sent = await settle(stream);
    // EDS is named, so it is sent (xDS allows skipping only wildcard LDS and CDS); CDS and LDS are not.
    expect(sent.map((response) => response.typeUrl)).toEqual([ENDPOINT]);
    expect(h.cp.session(NODE)?.state).toBe('serving');

    await h.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));
    const changed = await settle(stream);
    expect(namesOf(changed.find((response) => response.typeUrl === CLUSTER)!)).toEqual([...CLUSTERS, 'payments']);
    expect(namesOf(changed.find((response) => response.typeUrl === LISTENER)!)).toEqual([...LISTENERS, 'outbound:127.0.0.1:20002']);
  });

  it('first sends a node that the load balancer moves to another instance its real configuration, at the same versions', async () => {
    const a = await start('instance-a');
    try {
      const h = (harness = await start('instance-b'));
      const first = await envoyConnect(a);
      first.stream.close();
      const second = await envoyConnect(h);
      expect(second.clusters.controlPlane).toBe('instance-b');
      expect(namesOf(second.stream.responses[0]!)).toEqual(CLUSTERS);
      expect(second.clusters.versionInfo).toBe(first.clusters.versionInfo);
      expect(second.listeners.versionInfo).toBe(first.listeners.versionInfo);
      expectNeverLessThanConfigured([first.stream, second.stream]);
    } finally {
      await a.stop();
    }
  });
});

describe('kuma#2171 and I3: the sessions of churning nodes are evicted and leave nothing', () => {
  const NODES = 10_000;
  const CONCURRENCY = 200;
  const ADS = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

  /** One Envoy-like cycle: open a stream, ask for wildcard CDS, take the first response, close. */
  function cycle(client: Client, node: string): Promise<DecodedResponse> {
    return new Promise((resolve, reject) => {
      let first: Buffer | undefined;
      const call = client.makeBidiStreamRequest(ADS, (value: Uint8Array) => Buffer.from(value), (bytes: Buffer) => bytes, new Metadata());
      call.on('data', (bytes: Buffer) => {
        if (first) return;
        first = bytes;
        // Half-close, as a client going away cleanly does; the server ends the call. (Cancelling
        // thousands of streams on one connection trips HTTP/2 rapid-reset protection.)
        call.end();
      });
      call.on('error', reject);
      call.on('status', ({ code, details }: { code: number; details: string }) => {
        if (code !== status.OK || !first) reject(new Error(`${node}: stream ended ${code} ${details} before a response`));
        else resolve(decodeResponse(first));
      });
      call.write(encodeRequest({ typeUrl: CLUSTER, nodeId: node }));
    });
  }

  it(`evicts ${NODES.toLocaleString('en')} sessions of distinct nodes after the grace and releases their snapshots`, async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    // Let pending callbacks and WeakRef bookkeeping finish, then collect. (What the sessions
    // cost in heap is measured by bench/churn.bench.ts, not bounded here.)
    const collect = async () => {
      for (let i = 0; i < 3; i++) {
        await new Promise((resolve) => setImmediate(resolve));
        gc();
      }
    };

    const log = new MemoryEventLog();
    // Up to CONCURRENCY streams share the two connections, unevenly: more than the default allows one.
    const h = (harness = await startHarness({ store: log, xdsLimits: { maxStreamsPerConnection: CONCURRENCY } }));
    const names = Array.from({ length: NODES }, (_, i) => `dp-${i}`);
    for (let i = 0; i < names.length; i += 1_000) {
      await Promise.all(names.slice(i, i + 1_000).map((name, j) => h.cp.apply(backendDataplane(name, 10_000 + i + j))));
    }
    const clients = [0, 1].map(() => new Client(h.xds, credentials.createInsecure()));
    const checked: DecodedResponse[] = [];
    const churn = async (nodes: readonly string[]) => {
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < nodes.length; i = next++) {
          const response = await cycle(clients[i % clients.length]!, `default.${nodes[i]}`);
          if (i % 1_000 === 0) checked.push(response);
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    };

    served.every = 100;
    try {
      await churn(names);
    } finally {
      for (const client of clients) client.close();
      served.every = 0;
    }
    // Every first response was the node's real CDS.
    expect(checked).toHaveLength(NODES / 1_000);
    for (const response of checked) expect(response.resources).toEqual([expect.objectContaining({ type: 'STATIC' })]);
    // The server sees a half-close before it sends the status: every session is disconnected now.
    expect(h.cp.listSessions().filter((session) => session.state === 'disconnected')).toHaveLength(NODES);
    // One in a hundred of the sessions' generations, and of those made ahead of the nodes meanwhile.
    expect(served.refs.length).toBeGreaterThanOrEqual(NODES / 100);

    h.clock.increment(10_000);
    expect(h.cp.listSessions()).toHaveLength(0);
    // The sessions' records for the fleet's view go with the next save (every second).
    await vi.waitFor(async () => expect(await log.sessionRecords.list(60_000)).toHaveLength(0), { timeout: budget(5_000), interval: 100 });
    await collect();
    // Nothing holds a snapshot of an evicted session (I3).
    expect(served.refs.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
  }, budget(120_000));
});
