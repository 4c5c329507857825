import { isDeepStrictEqual } from 'node:util';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PreviewAnswer } from '../../src/changes/index.js';
import { createControlPlane, type ControlPlane } from '../../src/index.js';
import { runCli } from '../cli/cli-harness.js';
import { versionSplit } from '../mesh/policy-fixtures.js';
import { startEchoBackend, type EchoBackend, type EchoClient } from '../support/echo-backend.js';
import { backendDataplane, clientDataplane } from '../support/harness.js';
import { eventually, Traffic } from '../support/traffic.js';
import { createXdsEchoClient } from '../support/xds-client.js';
import { startTestPostgres, type TestPostgres } from '../store/test-postgres.js';

/**
 * Change safety with a real proxyless gRPC client (grpc-js-xds, SotW) and two instances on one
 * Postgres (issue 31): the client is served by instance B, the writes go to instance A. A's
 * dry run predicts, resource for resource, what B then pushes the client; A's `apply --wait`
 * returns once the client ACKed on B (read from B's saved records), and reports it pending
 * once it is disconnected.
 */

const NODE = 'default.client';
const TYPES = ['LDS', 'RDS', 'CDS', 'EDS'] as const;

let postgres: TestPostgres;
beforeAll(async () => {
  postgres = await startTestPostgres();
});
afterAll(async () => {
  await postgres.stop();
});

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function instance(url: string, id: string): Promise<ControlPlane> {
  const cp = createControlPlane({
    xdsAddress: '127.0.0.1:0',
    apiAddress: '127.0.0.1:0',
    store: url,
    instanceId: id,
    // Saved often, so the other instance reads the client's ACK soon after it is made.
    recordInterval: 100,
    instanceTtl: 5_000,
    logger: pino({ level: 'silent' }),
  });
  await cp.start();
  cleanups.push(() => cp.stop());
  return cp;
}

async function backend(name: string): Promise<EchoBackend> {
  const started = await startEchoBackend(name);
  cleanups.push(() => started.stop());
  return started;
}

/** What `cp` last sent the client, per type: each resource's JSON by name. */
function sentTo(cp: ControlPlane): Record<string, Map<string, string>> {
  const sent = cp.lastSent(NODE) ?? {};
  return Object.fromEntries(
    TYPES.map((type) => [type, new Map((sent[type]?.resources ?? []).map((resource) => [nameOf(resource), JSON.stringify(resource)]))]),
  );
}

function nameOf(resource: unknown): string {
  const { name, cluster_name: clusterName } = resource as { name?: string; cluster_name?: string };
  return name ?? clusterName ?? '?';
}

type Impact = Record<string, { readonly added: string[]; readonly changed: string[]; readonly removed: string[] }>;

/** Per type, the names pushed between `before` and `after`: added, changed, removed. */
function pushedBetween(before: Record<string, Map<string, string>>, after: Record<string, Map<string, string>>): Impact {
  return Object.fromEntries(
    TYPES.map((type) => [
      type,
      {
        added: [...after[type]!.keys()].filter((name) => !before[type]!.has(name)).sort(),
        changed: [...after[type]!.keys()].filter((name) => before[type]!.has(name) && before[type]!.get(name) !== after[type]!.get(name)).sort(),
        removed: [...before[type]!.keys()].filter((name) => !after[type]!.has(name)).sort(),
      },
    ]),
  );
}

/** Per type, the names the preview said the client would be sent. */
function predictedFor(preview: PreviewAnswer): Impact {
  const types = preview.nodes.items.find((node) => node.node === NODE)?.types ?? {};
  const names = (refs: readonly { readonly name: string }[] | undefined) => (refs ?? []).map((ref) => ref.name);
  return Object.fromEntries(TYPES.map((type) => [type, { added: names(types[type]?.added), changed: names(types[type]?.changed), removed: names(types[type]?.removed) }]));
}

/**
 * What was pushed between `before` and `after` is what the preview said the client would get:
 * per type the same names added, changed and removed, and each added or changed resource as
 * the preview rendered it.
 */
function expectPredicted(preview: PreviewAnswer, before: Record<string, Map<string, string>>, after: Record<string, Map<string, string>>): void {
  expect(pushedBetween(before, after)).toEqual(predictedFor(preview));
  const types = preview.nodes.items.find((node) => node.node === NODE)?.types ?? {};
  for (const type of TYPES) {
    for (const ref of [...(types[type]?.added ?? []), ...(types[type]?.changed ?? [])]) expect(JSON.parse(after[type]!.get(ref.name)!), `${type} ${ref.name}`).toEqual(preview.resources[ref.version]);
  }
}

/** greeter-N serving greeter as version `version`, over gRPC. */
const greeter = (backend: EchoBackend, version: string) => ({
  type: 'Dataplane',
  mesh: 'default',
  name: backend.name,
  networking: { address: '127.0.0.1', inbound: [{ port: backend.port, tags: { service: 'greeter', version, protocol: 'grpc' } }] },
});

/** The writes of the table, as `chancery apply` or `chancery delete` takes them. */
const WRITES: ReadonlyArray<{ readonly name: string; readonly args: readonly string[]; readonly body?: object }> = [
  {
    name: 'a MeshTimeout for calls to greeter',
    args: ['apply', '-f', '-'],
    body: { type: 'MeshTimeout', mesh: 'default', name: 'greeter-timeout', spec: { targetRef: { kind: 'Mesh' }, to: [{ targetRef: { kind: 'MeshService', name: 'greeter' }, default: { http: { requestTimeout: '3s' } } }] } },
  },
  {
    name: 'a MeshHTTPRoute splitting greeter 80/20 by version',
    args: ['apply', '-f', '-'],
    body: versionSplit('greeter-split', 'greeter', [80, 20]),
  },
  { name: 'an endpoint of greeter removed', args: ['delete', 'dataplane', 'greeter-2', '--mesh', 'default'] },
];

describe('a proxyless gRPC client (grpc-js-xds) and a table of writes', { timeout: 60_000 }, () => {
  it('is sent, write by write, what the dry run predicted: a timeout, a split by version, an endpoint removed', async () => {
    const a = await instance(await postgres.newDatabase(), 'cp-a');
    const cli = (args: readonly string[], stdin?: string) => runCli(args, { env: { CHANCERY_API_ADDRESS: a.addresses.api! }, ...(stdin !== undefined && { stdin }) });
    const backends = [await backend('greeter-1'), await backend('greeter-2')];
    await a.apply(clientDataplane('client'));
    for (const [index, each] of backends.entries()) await a.apply(greeter(each, `v${index + 1}`));
    const client = createXdsEchoClient({ service: 'greeter', xdsServer: a.addresses.xds, nodeId: NODE });
    cleanups.push(() => client.close());
    const traffic = new Traffic(client);
    await traffic.until('answers from both greeters', (recent) => recent.includes('greeter-1') && recent.includes('greeter-2'), { window: 10 });
    for (const write of WRITES) {
      const stdin = write.body === undefined ? undefined : JSON.stringify(write.body);
      const before = sentTo(a);
      const previewed = await cli([...write.args, '--dry-run', '-o', 'json'], stdin);
      expect(previewed.code, `${write.name}: ${previewed.stderr}`).toBe(0);
      const preview = JSON.parse(previewed.stdout) as PreviewAnswer;
      expect(preview.nodes.items.map((node) => node.node), write.name).toContain(NODE);
      const written = await cli([...write.args, '--wait'], stdin);
      expect(written.code, `${write.name}: ${written.stdout}${written.stderr}`).toBe(0);
      // Acked at the write's revision, the client may still be asking for what its new routes
      // name: given time to, and then compared, so that a difference is shown as one.
      await eventually(`${write.name}: the client sent what was predicted`, () => isDeepStrictEqual(pushedBetween(before, sentTo(a)), predictedFor(preview))).catch(() => {});
      expectPredicted(preview, before, sentTo(a));
    }
    // The client ran on through every write: after the last, only greeter-1 answers.
    await traffic.until('answers from greeter-1 alone', (recent) => recent.length >= 10 && recent.every((from) => from === 'greeter-1'), { window: 10 });
  });
});

describe('a proxyless gRPC client served by another instance on one Postgres', { timeout: 60_000 }, () => {
  it('is sent what the dry run predicted, is waited for until it ACKed, and is reported pending once disconnected', async () => {
    const url = await postgres.newDatabase();
    const a = await instance(url, 'cp-a');
    const b = await instance(url, 'cp-b');
    const cli = (args: readonly string[], stdin?: string) => runCli(args, { env: { CHANCERY_API_ADDRESS: a.addresses.api! }, ...(stdin !== undefined && { stdin }) });
    const one = await backend('greeter-1');
    await a.apply(clientDataplane('client'));
    await a.apply(backendDataplane(one.name, one.port, 'greeter'));
    let client: EchoClient | undefined = createXdsEchoClient({ service: 'greeter', xdsServer: b.addresses.xds, nodeId: NODE });
    cleanups.push(() => client?.close());
    const traffic = new Traffic(client);
    await traffic.until('an answer from greeter-1', (recent) => recent.includes('greeter-1'));
    // A's dry run knows the client's subscriptions from B's saved record.
    const saved = async () => (await a.fleetSessions(NODE)).some((view) => view.instance === 'cp-b' && view.types['EDS']?.acked !== undefined);
    await eventually('cp-b’s saved record of the client, ACKed', saved);
    const before = sentTo(b);

    const two = await backend('greeter-2');
    const body = JSON.stringify(backendDataplane(two.name, two.port, 'greeter'));
    const preview = JSON.parse((await cli(['apply', '--dry-run', '-o', 'json', '-f', '-'], body)).stdout) as PreviewAnswer;
    const predicted = preview.nodes.items.find((node) => node.node === NODE);
    expect(predicted?.connectedTo).toEqual(['cp-b']);
    expect(Object.keys(predicted?.types ?? {})).toEqual(['EDS']);

    const written = await cli(['apply', '--wait', '-f', '-'], body);
    expect(written.code, written.stdout + written.stderr).toBe(0);
    expect(written.stdout).toMatch(/AFFECTED {3}ACKED {3}NACKED {3}PENDING {3}NOT CONNECTED\n2 {10}1 /);
    const after = sentTo(b);
    expectPredicted(preview, before, after);
    await traffic.until('answers from both greeters', (recent) => recent.includes('greeter-1') && recent.includes('greeter-2'), { window: 10 });

    // Disconnected on B: A's --wait reports it pending, on cp-b, and gives up at its timeout.
    client.close();
    client = undefined;
    const disconnected = async () => (await a.fleetSessions(NODE)).some((view) => view.instance === 'cp-b' && view.state === 'disconnected');
    await eventually('cp-b’s saved record of the client, disconnected', disconnected);
    const three = await backend('greeter-3');
    // Past the second for which A reuses the fleet's saved sessions, so its last look reads B's record as saved now.
    const waited = await cli(['apply', '--wait', '--timeout', '2s', '-f', '-'], JSON.stringify(backendDataplane(three.name, three.port, 'greeter')));
    expect(waited.code, waited.stdout).toBe(1);
    expect(waited.stdout).toContain(`Pending: ${NODE} (disconnected, on cp-b)\n`);
  });
});
