import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PreviewAnswer } from '../../src/changes/index.js';
import { createControlPlane, type ControlPlane } from '../../src/index.js';
import { runCli } from '../cli/cli-harness.js';
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
    for (const type of TYPES) {
      const changed = [...after[type]!.keys()].filter((name) => before[type]!.has(name) && before[type]!.get(name) !== after[type]!.get(name)).sort();
      const added = [...after[type]!.keys()].filter((name) => !before[type]!.has(name)).sort();
      const removed = [...before[type]!.keys()].filter((name) => !after[type]!.has(name)).sort();
      const impact = predicted?.types[type];
      expect({ type, added, changed, removed }).toEqual({
        type,
        added: (impact?.added ?? []).map((ref) => ref.name),
        changed: (impact?.changed ?? []).map((ref) => ref.name),
        removed: (impact?.removed ?? []).map((ref) => ref.name),
      });
    }
    // What B pushed is what the preview rendered, resource for resource.
    const eds = predicted!.types['EDS']!.changed[0]!;
    expect(JSON.parse(after['EDS']!.get(eds.name)!)).toEqual(preview.resources[eds.version]);
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
