import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NodeImpact, PreviewAnswer, RolloutAnswer } from '../../src/changes/index.js';
import { runCli } from '../cli/cli-harness.js';
import { envoyBinary, type ConfigDump, type DumpedResource } from '../support/envoy.js';
import { startHarness, type Harness } from '../support/harness.js';
import { HttpClient, startHttpBackend, type HttpBackend } from '../support/http-backend.js';
import { eventually, Traffic } from '../support/traffic.js';
import { freePort } from '../support/ports.js';
import { reaches } from '../support/real-clients/index.js';
import { SidecarMesh, XDS_MODES, type Client, type DataplaneSpec } from '../support/real-clients/sidecar-mesh.js';

/**
 * Change safety against a real Envoy (issue 31), over SotW and Delta. One Envoy, web-1's, calls
 * service echo; the echo apps are served straight (their Dataplanes' inbound port is the app's
 * own), so a change costs no other Envoy. For each write of a table, the dry run's impact on
 * web-1 is what Envoy then holds, resource for resource: the names added, changed and removed
 * per type, at the versions the preview gave (Delta: each resource's; SotW: the type's). Then a
 * revert under traffic, and a write Envoy refuses.
 */

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

const TYPES = { LDS: 'listeners', CDS: 'clusters', EDS: 'endpoints' } as const;

/** A resource a write of the table makes: a Dataplane, a traffic policy, or the Mesh itself (its mTLS). */
type Written =
  | DataplaneSpec
  | { readonly type: 'MeshTimeout'; readonly mesh: string; readonly name: string; readonly spec: object }
  | { readonly type: 'Mesh'; readonly name: string; readonly dataplaneAuth: 'none'; readonly mtls: { readonly mode: string; readonly certificateTTL: string } };

/** Where a resource of the table is written: a Mesh at its own path, the rest under the mesh. */
const pathOf = (resource: Written) =>
  resource.type === 'Mesh' ? `/meshes/${resource.name}` : `/meshes/default/${{ Dataplane: 'dataplanes', MeshTimeout: 'meshtimeouts' }[resource.type]}/${resource.name}`;

/** The default mesh with mTLS in `mode`: certificates of an hour, so none renews while a row is checked. */
const mtls = (mode: 'permissive' | 'strict'): Written => ({ type: 'Mesh', name: 'default', dataplaneAuth: 'none', mtls: { mode, certificateTTL: '1h' } });

/** A MeshTimeout giving calls to echo a connect timeout of `seconds`: every caller's echo cluster changes. */
const timeout = (seconds: number): Written => ({
  type: 'MeshTimeout',
  mesh: 'default',
  name: 'echo-connect',
  spec: { targetRef: { kind: 'Mesh' }, to: [{ targetRef: { kind: 'MeshService', name: 'echo' }, default: { connectionTimeout: `${seconds}s` } }] },
});

/** What changed between two dumps of one type: names added, changed (their content) and removed. */
function observed(before: readonly DumpedResource[], after: readonly DumpedResource[]) {
  const was = new Map(before.map((resource) => [resource.name, resource]));
  const is = new Map(after.map((resource) => [resource.name, resource]));
  return {
    added: [...is.keys()].filter((name) => !was.has(name)).sort(),
    changed: [...is.keys()].filter((name) => was.has(name) && JSON.stringify(was.get(name)!.resource) !== JSON.stringify(is.get(name)!.resource)).sort(),
    removed: [...was.keys()].filter((name) => !is.has(name)).sort(),
  };
}

/** Every socket address a resource holds, as `address:port`, sorted. */
function addressesOf(value: unknown): string[] {
  const found: string[] = [];
  const walk = (node: unknown) => {
    if (typeof node !== 'object' || node === null) return;
    const { socket_address: socket } = node as { socket_address?: { address: string; port_value: number } };
    if (socket !== undefined) found.push(`${socket.address}:${socket.port_value}`);
    for (const child of Object.values(node)) walk(child);
  };
  walk(value);
  return found.sort();
}

/** The preview's impact on one type, as names. */
function predicted(node: NodeImpact | undefined, type: keyof typeof TYPES) {
  const impact = node?.types[type];
  const names = (refs: readonly { name: string }[] | undefined) => (refs ?? []).map((ref) => ref.name).sort();
  return { added: names(impact?.added), changed: names(impact?.changed), removed: names(impact?.removed) };
}

describe.each(XDS_MODES)('changing a fleet safely, with a real Envoy over %s', { timeout: 60_000 }, (mode) => {
  let harness: Harness;
  let mesh: SidecarMesh;
  const apps: HttpBackend[] = [];
  let squatter: Server | undefined;
  beforeEach(async () => {
    harness = await startHarness();
    mesh = new SidecarMesh(harness.api, harness.xds, mode);
  });
  afterEach(async () => {
    squatter?.close();
    await mesh.stop();
    for (const app of apps.splice(0)) await app.stop();
    await harness.stop();
  });

  const cli = (args: readonly string[], stdin?: string) => runCli(args, { env: { CHANCERY_API_ADDRESS: harness.api }, ...(stdin !== undefined && { stdin }) });

  /** An echo app served straight: its Dataplane's inbound is the app's own port. */
  async function app(name: string): Promise<DataplaneSpec> {
    const started = await startHttpBackend(name);
    apps.push(started);
    return { type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1', inbound: [{ port: started.port, tags: { service: 'echo' } }] } };
  }

  async function preview(method: 'PUT' | 'DELETE', resource: Written): Promise<PreviewAnswer> {
    const response = await fetch(`http://${harness.api}${pathOf(resource)}?dryRun=true`, {
      method,
      ...(method === 'PUT' && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(resource) }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as PreviewAnswer;
  }

  /** Previews a write, makes it with --wait, and checks web-1's Envoy holds what the preview said, resource for resource. */
  async function predictsTheWrite(client: Client, method: 'PUT' | 'DELETE', dataplane: Written): Promise<void> {
    const before = await client.envoy.configDump();
    const answer = await preview(method, dataplane);
    const impact = answer.nodes.items.find((node) => node.node === client.node);
    expect(impact, `the preview of ${method} ${dataplane.name} affects web-1`).toBeDefined();
    const written =
      method === 'PUT' ? await cli(['apply', '--wait', '-f', '-'], JSON.stringify(dataplane)) : await cli(['delete', dataplane.type.toLowerCase(), dataplane.name, '--wait']);
    expect(written.code, written.stdout + written.stderr).toBe(0);
    expect(written.stdout).toContain('Complete');
    let after: ConfigDump = before;
    const matches = async () => {
      after = await client.envoy.configDump();
      return (Object.keys(TYPES) as (keyof typeof TYPES)[]).every((type) => JSON.stringify(observed(before[TYPES[type]], after[TYPES[type]])) === JSON.stringify(predicted(impact, type)));
    };
    await client.envoy.waitFor(`the configuration the preview of ${method} ${dataplane.name} gave`, matches, 10_000).catch(() => undefined);
    for (const type of Object.keys(TYPES) as (keyof typeof TYPES)[]) {
      expect(observed(before[TYPES[type]], after[TYPES[type]]), `${type} after ${method} ${dataplane.name}`).toEqual(predicted(impact, type));
      const typeImpact = impact!.types[type];
      if (typeImpact === undefined) continue;
      for (const ref of [...typeImpact.added, ...typeImpact.changed]) {
        const held = after[TYPES[type]].find((resource) => resource.name === ref.name)!;
        // Envoy's dump has no version for assignments: their endpoints are compared with the preview's.
        if (type === 'EDS') expect(addressesOf(held.resource), ref.name).toEqual(addressesOf(answer.resources[ref.version]));
        // Delta versions each resource; SotW gives the response's version to all it carried.
        else expect(held.version, `${type} ${ref.name}`).toBe(mode === 'delta' ? ref.version : typeImpact.version);
      }
    }
  }

  it('previews mesh mTLS switched on, permissive then strict, as the Envoy then holds it', async () => {
    for (const dataplane of [await app('echo-1'), await app('echo-2')]) await mesh.put(dataplane);
    const client = await mesh.addClient('web-1');
    await reaches(client, ['echo-1', 'echo-2']);
    // Permissive: web-1's inbound takes TLS and plaintext; its echo cluster stays plaintext, as the
    // echo apps have no sidecar to take TLS. Strict: the cluster presents web-1's certificate. The
    // preview is made with the certificate web-1's session holds, and carries it as it is.
    await predictsTheWrite(client, 'PUT', mtls('permissive'));
    await predictsTheWrite(client, 'PUT', mtls('strict'));
  });

  it('previews each write as the Envoy then holds it, reverts under traffic with no failed request, and reports a refused write', async () => {
    const echo1 = await app('echo-1');
    const echo2 = await app('echo-2');
    for (const dataplane of [echo1, echo2]) await mesh.put(dataplane);
    const client = await mesh.addClient('web-1');
    await reaches(client, ['echo-1', 'echo-2']);

    // The table: an outbound moved, an endpoint added, an endpoint removed, a policy written and deleted.
    const moved: DataplaneSpec = { ...client.dataplane, networking: { ...client.dataplane.networking, outbound: [{ port: await freePort(), service: 'echo' }] } };
    await predictsTheWrite(client, 'PUT', moved);
    const revision = harness.cp.store.projection.revision;
    const traffic = new Traffic(new HttpClient(moved.networking.outbound![0]!.port));
    await predictsTheWrite(client, 'PUT', await app('echo-3'));
    await predictsTheWrite(client, 'DELETE', echo1);
    await predictsTheWrite(client, 'PUT', timeout(3));
    await predictsTheWrite(client, 'DELETE', timeout(3));
    const atRevision = await client.envoy.configDump();

    // Revert under traffic: echo-1 back, echo-3 gone; not one request fails.
    const reverted = cli(['revert', '--to-revision', String(revision), '--wait']);
    await traffic.during(reverted, 'the revert');
    const { code, stdout } = await reverted;
    expect({ code, stdout }).toMatchObject({ code: 0, stdout: expect.stringContaining('Dataplane default/echo-1 created\nDataplane default/echo-3 deleted\n') });
    expect(stdout).not.toContain('MeshTimeout');
    expect(traffic.failures).toEqual([]);
    expect(traffic.completed).toBeGreaterThan(0);
    const endpoints = (await client.envoy.configDump()).endpoints.map((resource) => resource.resource);
    expect(JSON.stringify(endpoints)).toContain(String(echo1.networking.inbound![0]!.port));
    expect(JSON.stringify(endpoints)).not.toBe(JSON.stringify(atRevision.endpoints.map((resource) => resource.resource)));
    await traffic.until('answers from echo-1 and echo-2', (recent) => ['echo-1', 'echo-2'].every((name) => recent.includes(name)), { window: 12, attempts: 2_000 });

    // A write Envoy refuses: an outbound on a port another process holds. --wait names the node and Envoy's words.
    squatter = createServer();
    await new Promise<void>((resolve) => squatter!.listen(0, '127.0.0.1', resolve));
    const held = (squatter.address() as AddressInfo).port;
    const refused: DataplaneSpec = { ...moved, networking: { ...moved.networking, outbound: [...moved.networking.outbound!, { port: held, service: 'echo' }] } };
    const nacked = await cli(['apply', '--wait', '-f', '-'], JSON.stringify(refused));
    expect(nacked.code).toBe(1);
    expect(nacked.stdout).toContain(`NACKed (LDS) by 1 node: Error adding/updating listener(s) outbound:127.0.0.1:${held}: cannot bind '127.0.0.1:${held}': Address already in use`);
    expect(nacked.stdout).toMatch(/\n {2}default\.web-1\n/);
    await eventually('the NACK in the rollout', async () => {
      const rollout = (await (await fetch(`http://${harness.api}/revisions/${harness.cp.store.projection.revision}`)).json()) as RolloutAnswer;
      return rollout.nodes.nacked === 1;
    });
  });
});
