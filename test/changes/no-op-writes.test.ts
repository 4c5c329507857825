import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { asSeq } from '../../src/store/index.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import { runCli } from '../cli/cli-harness.js';
import { AdsStream } from '../support/ads-client.js';
import { startHarness, type Harness } from '../support/harness.js';

const EXAMPLES = fileURLToPath(new URL('../../examples/dataplanes.yaml', import.meta.url));
const DOCUMENTS = ['backend-1', 'backend-2', 'client', 'echo-1', 'echo-2', 'web-1'];

let harness: Harness;
const streams: AdsStream[] = [];
beforeEach(async () => {
  harness = await startHarness();
});
afterEach(async () => {
  for (const stream of streams.splice(0)) stream.close();
  await harness.stop();
});

const apply = (file: string, stdin?: string) =>
  runCli(['apply', '-f', file], { env: { CHANCERY_API_ADDRESS: harness.api }, ...(stdin !== undefined && { stdin }) });

/** web-1's Envoy, as it connects: CDS and LDS wildcard, EDS for its outbound's cluster; every response ACKed. */
async function connectWeb(): Promise<AdsStream> {
  const stream = AdsStream.open(harness.xds);
  streams.push(stream);
  stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1' });
  stream.ack(await stream.nextResponse());
  stream.send({ typeUrl: ENDPOINT, resourceNames: ['echo'] });
  stream.ack(await stream.nextResponse(), ['echo']);
  stream.send({ typeUrl: LISTENER });
  stream.ack(await stream.nextResponse());
  return stream;
}

const endpointsOf = (resource: Record<string, unknown>) =>
  ((resource['endpoints'] as Array<{ lb_endpoints: unknown[] }>)[0]?.lb_endpoints ?? []).length;

describe('a write identical to what is stored is a no-op (DESIGN §7)', () => {
  it('re-applying examples/dataplanes.yaml appends no event and pushes nothing to a connected Envoy', async () => {
    const first = await apply(EXAMPLES);
    expect(first.stdout).toBe(`${DOCUMENTS.map((name) => `Dataplane default/${name} created\n`).join('')}6 resources: 6 created, 0 configured, 0 unchanged, 0 refused\n`);
    const stream = await connectWeb();
    const revision = harness.cp.store.projection.revision;
    const mark = stream.responses.length;

    const again = await apply(EXAMPLES);
    expect(again).toEqual({ code: 0, stderr: '', stdout: `${DOCUMENTS.map((name) => `Dataplane default/${name} unchanged\n`).join('')}6 resources: 0 created, 0 configured, 6 unchanged, 0 refused\n` });
    expect(await harness.cp.store.readEvents(asSeq(revision), 100)).toEqual([]);
    expect(harness.cp.store.projection.revision).toBe(revision);

    // A real change the node sees: its push is the first response after the re-apply, so the
    // re-apply pushed nothing (one stream's responses arrive in the order they were written).
    const echo3 = 'type: Dataplane\nmesh: default\nname: echo-3\nnetworking: { address: 127.0.0.1, inbound: [{ port: 10003, servicePort: 8083, tags: { service: echo } }] }\n';
    expect((await apply('-', echo3)).stdout).toBe('Dataplane default/echo-3 created\n1 resource: 1 created, 0 configured, 0 unchanged, 0 refused\n');
    const next = await stream.nextResponse(mark + 1);
    expect(next.typeUrl).toBe(ENDPOINT);
    expect(endpointsOf(next.resources[0]!)).toBe(3);
    expect(harness.cp.session('default.web-1')?.revision).toBe(revision + 1);
  });
});
