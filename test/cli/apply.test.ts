import { createServer } from 'node:net';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/index.js';
import { keyOf } from '../../src/mesh/index.js';
import { apiFor } from '../api/api-harness.js';
import { runCli } from './cli-harness.js';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

const api = apiFor();

const apply = (args: readonly string[], stdin?: string) =>
  runCli(['apply', ...args], { env: { CHANCERY_API_ADDRESS: api.address }, ...(stdin !== undefined && { stdin }) });

const names = () => api.store.list('Dataplane').map(({ resource }) => `${keyOf(resource).mesh}/${resource.name}`);

describe('chancery apply', () => {
  it('applies a multi-document YAML file, meshes first, one line per resource', async () => {
    const { code, stdout, stderr } = await apply(['-f', fixture('cli-payments.yaml')]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toBe(
      ['Mesh payments created', 'Dataplane payments/ledger-1 created', 'Dataplane payments/gateway-1 created', '3 resources: 3 created, 0 configured, 0 unchanged, 0 refused', ''].join('\n'),
    );
    expect(names()).toEqual(['payments/gateway-1', 'payments/ledger-1']);
  });

  it('says configured for resources it changed, and unchanged for those identical to what is stored', async () => {
    await apply(['-f', fixture('cli-payments.yaml')]);
    const moved = 'type: Dataplane\nmesh: payments\nname: ledger-1\nnetworking: { address: 10.0.0.9, inbound: [{ port: 10001, tags: { service: ledger } }] }\n';
    expect((await apply(['-f', '-'], moved)).stdout).toBe('Dataplane payments/ledger-1 configured\n1 resource: 0 created, 1 configured, 0 unchanged, 0 refused\n');
    const { code, stdout } = await apply(['-f', fixture('cli-payments.yaml')]);
    expect(code).toBe(0);
    expect(stdout).toBe(['Mesh payments unchanged', 'Dataplane payments/ledger-1 configured', 'Dataplane payments/gateway-1 unchanged', '3 resources: 0 created, 1 configured, 2 unchanged, 0 refused', ''].join('\n'));
  });

  it('applies a JSON array indented with tabs', async () => {
    const { code, stdout } = await apply(['-f', fixture('cli-list.json')]);
    expect(code).toBe(0);
    expect(stdout).toBe('Mesh orders created\nDataplane orders/orders-1 created\n2 resources: 2 created, 0 configured, 0 unchanged, 0 refused\n');
  });

  it('reads stdin for -f -, and puts a dataplane without a mesh in default', async () => {
    const yaml = '- type: Dataplane\n  name: web-1\n  networking: { address: 10.0.0.9, outbound: [{ port: 20001, service: backend }] }\n';
    const { code, stdout } = await apply(['-f', '-'], yaml);
    expect(code).toBe(0);
    expect(stdout).toBe('Dataplane default/web-1 created\n1 resource: 1 created, 0 configured, 0 unchanged, 0 refused\n');
  });

  it('applies nothing when the server refuses a resource: each refused one named with its file, field and reason, and the count', async () => {
    const { code, stdout, stderr } = await apply(['-f', fixture('cli-one-invalid.yaml')]);
    expect(code).toBe(1);
    expect(stdout).toBe('3 resources: 0 created, 0 configured, 0 unchanged, 1 refused, 2 not applied\n');
    expect(stderr).toContain(`Dataplane default/backend-2 (${fixture('cli-one-invalid.yaml')}: resource 2) refused: CHANCERY_API_INVALID_RESOURCE (HTTP 400)`);
    expect(stderr).toContain('field: networking.inbound[0].port');
    expect(stderr).toContain('must be an integer from 1 to 65535');
    expect(stderr).toContain('Nothing of these 3 resources was applied: an apply is all or nothing.');
    expect(names()).toEqual([]);
  });

  it('reports every refused resource of a file, not only the first, and stores nothing', async () => {
    const yaml = [
      'type: Dataplane\nname: web-1\nnetworking: { address: 10.0.0.1, inbound: [{ port: 0, tags: { service: web } }] }',
      'type: Dataplane\nname: web-2\nmesh: nowhere\nnetworking: { address: 10.0.0.2, inbound: [{ port: 10001, tags: { service: web } }] }',
      'type: Dataplane\nname: web-3\nversion: 7\nnetworking: { address: 10.0.0.3, inbound: [{ port: 10001, tags: { service: web } }] }',
      'type: Dataplane\nname: web-4\nnetworking: { address: 10.0.0.4, inbound: [{ port: 10001, tags: { service: web } }] }',
    ].join('\n---\n');
    const before = api.contents();
    const { code, stdout, stderr } = await apply(['-f', '-'], yaml);
    expect(code).toBe(1);
    expect(stdout).toBe('4 resources: 0 created, 0 configured, 0 unchanged, 3 refused, 1 not applied\n');
    expect(stderr).toMatch(/Dataplane default\/web-1 \(stdin: resource 1\) refused: CHANCERY_API_INVALID_RESOURCE \(HTTP 400\): .*\n  field: networking.inbound\[0\].port/);
    expect(stderr).toMatch(/Dataplane nowhere\/web-2 \(stdin: resource 2\) refused: CHANCERY_STORE_MESH_NOT_FOUND \(HTTP 404\): .*Mesh nowhere does not exist/);
    expect(stderr).toMatch(/Dataplane default\/web-3 \(stdin: resource 3\) refused: CHANCERY_STORE_VERSION_CONFLICT \(HTTP 409\)/);
    expect(stderr).not.toContain('web-4');
    expect(api.contents()).toEqual(before);
  });

  it('sends a file in one request, written at one revision, and counts each outcome', async () => {
    const count = 1_200;
    const dataplanes = Array.from({ length: count }, (_, index) => ({
      type: 'Dataplane',
      name: `dp-${index}`,
      networking: { address: '10.0.0.1', inbound: [{ port: 10001 + (index % 1000), tags: { service: `svc-${index % 10}` } }] },
    }));
    await apply(['-f', '-'], JSON.stringify(dataplanes.slice(0, 200)));
    let puts = 0;
    const { store } = api;
    const write = store.write.bind(store);
    store.write = (writes, options) => {
      puts++;
      return write(writes, options);
    };
    const revision = store.projection.revision;
    const { code, stdout } = await apply(['-f', '-'], JSON.stringify(dataplanes));
    expect(code).toBe(0);
    expect(puts).toBe(1);
    expect(store.projection.revision).toBe(revision + count - 200);
    expect(new Set(store.list('Dataplane').map(({ updatedAt }) => updatedAt)).size).toBeLessThanOrEqual(2);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(count + 1);
    // The 200 applied before are identical: unchanged, and nothing is appended for them.
    expect(lines[0]).toBe('Dataplane default/dp-0 unchanged');
    expect(lines[count - 1]).toBe(`Dataplane default/dp-${count - 1} created`);
    expect(lines[count]).toBe(`${count} resources: 1000 created, 0 configured, 200 unchanged, 0 refused`);
  });

  it('shows its progress on a terminal for a large file, and clears it before the count', async () => {
    const dataplanes = Array.from({ length: 600 }, (_, index) => ({ type: 'Dataplane', name: `dp-${index}`, networking: { address: '10.0.0.1', inbound: [{ port: 10001, tags: { service: 'web' } }] } }));
    let stdout = '';
    let stderr = '';
    const code = await main(['apply', '-f', '-'], {
      stdout: { isTTY: true, write: (text: string) => (stdout += text) },
      stderr: { isTTY: true, write: (text: string) => (stderr += text) },
      env: { CHANCERY_API_ADDRESS: api.address },
      stdin: Readable.from([JSON.stringify(dataplanes)]),
    });
    expect(code).toBe(0);
    expect(stderr).toMatch(/^\r\u001b\[Kapplying: 0 of 600 resources answered, \d+\.\d s/);
    expect(stderr).toContain('applying: 600 of 600 resources answered');
    expect(stderr.endsWith('\r\u001b[K')).toBe(true);
    expect(stdout.endsWith('600 resources: 600 created, 0 configured, 0 unchanged, 0 refused\n')).toBe(true);
  });

  it('shows no progress for a large file when stderr is not a terminal', async () => {
    const dataplanes = Array.from({ length: 600 }, (_, index) => ({ type: 'Dataplane', name: `dp-${index}`, networking: { address: '10.0.0.1', inbound: [{ port: 10001, tags: { service: 'web' } }] } }));
    const { code, stderr } = await apply(['-f', '-'], JSON.stringify(dataplanes));
    expect(code).toBe(0);
    expect(stderr).toBe('');
  });

  it('applies nothing from a file with a document it cannot address', async () => {
    const yaml = 'type: Mesh\nname: one\n---\nname: no-type\n';
    const { code, stderr } = await apply(['-f', '-'], yaml);
    expect(code).toBe(1);
    expect(stderr).toContain('stdin: resource 2: field type: must be one of "Mesh", "Dataplane"');
    expect(api.store.list('Mesh').map((stored) => stored.resource.name)).toEqual(['default']);
  });

  it('reports malformed YAML with its line, and an unreadable file', async () => {
    const malformed = await apply(['-f', '-'], 'type: Mesh\nname: [unclosed\n');
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/stdin: invalid YAML: .*line/);
    const missing = await apply(['-f', fixture('cli-does-not-exist.yaml')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read: ENOENT/);
  });

  it('is a usage error without -f', async () => {
    const { code, stderr } = await apply([]);
    expect(code).toBe(2);
    expect(stderr).toContain("chancery apply: -f FILE is required");
    expect(stderr).toContain("See 'chancery apply --help'.");
  });

  it('says it cannot reach a server that is not there', async () => {
    const address = await closedAddress();
    const { code, stderr } = await runCli(['apply', '-f', fixture('cli-payments.yaml'), '--api-address', address]);
    expect(code).toBe(1);
    expect(stderr).toMatch(new RegExp(`^cannot reach Chancery at ${address}: connect ECONNREFUSED`, 'm'));
  });
});

/** An address nothing listens on: one the OS just handed out and took back. */
async function closedAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `127.0.0.1:${port}`;
}
