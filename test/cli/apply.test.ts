import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { keyOf } from '../../src/mesh/index.js';
import { type ApiHarness, startApi } from '../api/api-harness.js';
import { runCli } from './cli-harness.js';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

let api: ApiHarness;
beforeEach(async () => {
  api = await startApi();
});
afterEach(async () => {
  await api.close();
});

const apply = (args: readonly string[], stdin?: string) =>
  runCli(['apply', ...args], { env: { CHANCERY_API_ADDRESS: api.address }, ...(stdin !== undefined && { stdin }) });

const names = () => api.store.list('Dataplane').map(({ resource }) => `${keyOf(resource).mesh}/${resource.name}`);

describe('chancery apply', () => {
  it('applies a multi-document YAML file, meshes first, one line per resource', async () => {
    const { code, stdout, stderr } = await apply(['-f', fixture('cli-payments.yaml')]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toBe(['Mesh payments created', 'Dataplane payments/ledger-1 created', 'Dataplane payments/gateway-1 created', ''].join('\n'));
    expect(names()).toEqual(['payments/gateway-1', 'payments/ledger-1']);
  });

  it('says configured for resources it changed, and unchanged for those identical to what is stored', async () => {
    await apply(['-f', fixture('cli-payments.yaml')]);
    const moved = 'type: Dataplane\nmesh: payments\nname: ledger-1\nnetworking: { address: 10.0.0.9, inbound: [{ port: 10001, tags: { service: ledger } }] }\n';
    expect((await apply(['-f', '-'], moved)).stdout).toBe('Dataplane payments/ledger-1 configured\n');
    const { code, stdout } = await apply(['-f', fixture('cli-payments.yaml')]);
    expect(code).toBe(0);
    expect(stdout).toBe(['Mesh payments unchanged', 'Dataplane payments/ledger-1 configured', 'Dataplane payments/gateway-1 unchanged', ''].join('\n'));
  });

  it('applies a JSON array indented with tabs', async () => {
    const { code, stdout } = await apply(['-f', fixture('cli-list.json')]);
    expect(code).toBe(0);
    expect(stdout).toBe('Mesh orders created\nDataplane orders/orders-1 created\n');
  });

  it('reads stdin for -f -, and puts a dataplane without a mesh in default', async () => {
    const yaml = '- type: Dataplane\n  name: web-1\n  networking: { address: 10.0.0.9, outbound: [{ port: 20001, service: backend }] }\n';
    const { code, stdout } = await apply(['-f', '-'], yaml);
    expect(code).toBe(0);
    expect(stdout).toBe('Dataplane default/web-1 created\n');
  });

  it('stops at the first refused resource: earlier ones applied, the field named, later ones listed as not applied', async () => {
    const { code, stdout, stderr } = await apply(['-f', fixture('cli-one-invalid.yaml')]);
    expect(code).toBe(1);
    expect(stdout).toBe('Dataplane default/backend-1 created\n');
    expect(stderr).toContain('Dataplane default/backend-2');
    expect(stderr).toContain('CHANCERY_API_INVALID_RESOURCE (HTTP 400)');
    expect(stderr).toContain('field: networking.inbound[0].port');
    expect(stderr).toContain('must be an integer from 1 to 65535');
    expect(stderr).toMatch(/not applied.*Dataplane default\/backend-3/i);
    expect(names()).toEqual(['default/backend-1']);
  });

  it('applies nothing from a file with a document it cannot address', async () => {
    const yaml = 'type: Mesh\nname: one\n---\nname: no-type\n';
    const { code, stderr } = await apply(['-f', '-'], yaml);
    expect(code).toBe(1);
    expect(stderr).toContain('stdin: resource 2: field type: must be "Mesh" or "Dataplane"');
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
