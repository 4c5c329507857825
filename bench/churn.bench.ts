/**
 * Churn: N distinct Envoy-like nodes each open a stream, take their first response and go
 * away; their sessions are evicted after the grace. What is left of the heap afterwards is
 * what churn costs a long-running instance (I3: it should be nothing per node).
 *
 *   npm run bench -- churn [--n 10000]
 *
 * The test suite checks that no evicted session's snapshot survives (test/seed/kuma-2171.test.ts);
 * the heap is measured here, not bounded there.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { parseArgs } from 'node:util';
import { Client, credentials, Metadata, status } from '@grpc/grpc-js';
import { pino } from 'pino';
import { Subject } from 'rxjs';
import { SimulatedClock } from 'xstate';
import { createControlPlane } from '../src/index.js';
import { encodeRequest } from '../src/xds/index.js';
import { CLUSTER } from '../src/xds/type-urls.js';
import { integerOption } from './support/integer-option.js';
import { printTable } from './support/print-table.js';

const ADS = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
const CONCURRENCY = 200;
/** Connections the cycles share: 50 streams each, well under the 100 one connection may have open (DEFAULTS.xdsLimits). */
const CONNECTIONS = 4;
const GRACE = 10_000;
const MB = 1024 * 1024;

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Heap in use once pending callbacks have run and garbage was collected. */
async function settledHeap(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  return process.memoryUsage().heapUsed;
}

/** One Envoy-like cycle: a stream, wildcard CDS, the first response, a half-close. */
function cycle(client: Client, node: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const call = client.makeBidiStreamRequest(ADS, (value: Uint8Array) => Buffer.from(value), (bytes: Buffer) => bytes, new Metadata());
    call.on('data', () => {
      if (answered) return;
      answered = true;
      call.end();
    });
    call.on('error', reject);
    call.on('status', ({ code, details }: { code: number; details: string }) =>
      code === status.OK && answered ? resolve() : reject(new Error(`${node}: ended ${code} ${details} before a response`)),
    );
    call.write(encodeRequest({ typeUrl: CLUSTER, nodeId: node }));
  });
}

export default async function churnBench(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({ args: [...argv], options: { n: { type: 'string' } }, strict: false });
  const nodes = integerOption('n', typeof values.n === 'string' ? values.n : '10000', 1, 100_000);
  const clock = new SimulatedClock();
  const cp = createControlPlane({
    xdsAddress: '127.0.0.1:0',
    apiAddress: false,
    store: 'memory',
    evictionGrace: GRACE,
    logger: pino({ level: 'silent' }),
    watchdog: new Subject<void>(),
    recordTicks: new Subject<void>(),
    clock,
  });
  await cp.start();
  const names = Array.from({ length: nodes }, (_, i) => `dp-${i}`);
  for (let i = 0; i < names.length; i += 1_000) {
    await Promise.all(
      names.slice(i, i + 1_000).map((name, j) =>
        cp.apply({ type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1', inbound: [{ port: 10_000 + i + j, tags: { service: 'backend' } }] } }),
      ),
    );
  }
  // A local subchannel pool each: grpc-js otherwise shares one connection among clients of one address.
  const clients = Array.from({ length: CONNECTIONS }, () => new Client(cp.addresses.xds, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }));
  const churn = async () => {
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < names.length; i = next++) await cycle(clients[i % clients.length]!, `default.${names[i]}`);
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  };

  let before: number, churned: number, disconnected: number, after: number;
  try {
    // A first round warms the code and pools; the second is the one measured.
    await churn();
    clock.increment(GRACE);
    before = await settledHeap();
    const started = performance.now();
    await churn();
    churned = performance.now() - started;
    disconnected = await settledHeap();
    clock.increment(GRACE);
    after = await settledHeap();
  } finally {
    // A failed cycle must not leave the process held open by the server and the clients.
    for (const client of clients) client.close();
    await cp.stop();
  }

  printTable(`churn of ${nodes.toLocaleString('en')} nodes, ${CONCURRENCY} at a time`, ['measure', 'value'], [
    ['cycles per second', String(Math.round(nodes / (churned / 1_000)))],
    ['heap held by the disconnected sessions', `${((disconnected - before) / MB).toFixed(1)} MB (${((disconnected - before) / nodes / 1024).toFixed(1)} KB a session)`],
    ['heap left once they were evicted', `${((after - before) / MB).toFixed(1)} MB`],
  ]);
}
