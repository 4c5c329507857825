import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/cli-harness.js';
import { freePort } from '../support/ports.js';
import { startHarness, type Harness } from '../support/harness.js';
import { testPython } from '../support/python.js';
import { eventually } from '../support/traffic.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** How long each client calls: past the agents' first renewal (2/3 of 30 s after they start) and gRPC's re-read (5 s). */
const CALLING_MS = 26_000;

interface Child {
  readonly process: ChildProcess;
  /** Every line it printed on stdout so far. */
  readonly lines: string[];
  /** Resolves with its last stdout line once it exits. */
  readonly exited: Promise<string>;
}

const children: Child[] = [];

function start(command: string, args: readonly string[], env: Record<string, string> = {}): Child {
  const child = spawn(command, args, { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter((line) => line !== '')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-3000)));
  const exited = new Promise<string>((resolve, reject) =>
    child.once('exit', (code) => (lines.length > 0 ? resolve(lines.at(-1)!) : reject(new Error(`${args.join(' ')} exited ${code} printing nothing:\n${stderr}`)))),
  );
  exited.catch(() => {});
  const started = { process: child, lines, exited };
  children.push(started);
  return started;
}

const tsx = (file: string, ...args: string[]) => [process.execPath, ['--import', 'tsx', path.join(ROOT, file), ...args]] as const;

let harness: Harness;
let dir: string;
beforeAll(async () => {
  harness = await startHarness();
  dir = mkdtempSync(path.join(tmpdir(), 'chancery-grpc-mtls-'));
});
afterAll(async () => {
  for (const child of children) child.process.kill('SIGTERM');
  await harness.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Starts `chancery agent` for `node`, keeping its files in DIR/<name>; resolves once it wrote them. */
async function agentFor(name: string): Promise<{ readonly dir: string; readonly agent: Child }> {
  const files = path.join(dir, name);
  const [command, args] = tsx('src/cli/main.ts', 'agent', '--node', `default.${name}`, '--dir', files, '--api-address', harness.api);
  const agent = start(command, args);
  await eventually(`${name}'s certificate files`, () => existsSync(path.join(files, 'cert-chain.pem')), { attempts: 400, every: 50 });
  return { dir: files, agent };
}

/** Writes the node's bootstrap, naming its agent's files, and answers its path. */
async function bootstrapFor(name: string, certificates: string): Promise<string> {
  const { code, stdout, stderr } = await runCli(['bootstrap', 'grpc', '--node', `default.${name}`, '--xds', harness.xds, '--certificates', certificates, '--api-address', harness.api]);
  if (code !== 0) throw new Error(stderr);
  const file = path.join(dir, `${name}.bootstrap.json`);
  writeFileSync(file, stdout);
  return file;
}

describe('proxyless gRPC over mesh mTLS, with certificate files kept by chancery agent', () => {
  it('carries every RPC of grpc-js-xds and of Python’s C-core to an XdsServer over mTLS, across the agents’ renewals', async () => {
    await harness.cp.apply({ type: 'Mesh', name: 'default', dataplaneAuth: 'none', mtls: { mode: 'strict', certificateTTL: '30s' } });
    await eventually('the mesh’s CA', () => harness.cp.list('CertificateAuthority', 'default').length === 1);
    const port = await freePort();
    await harness.cp.apply({ type: 'Dataplane', mesh: 'default', name: 'greeter-1', networking: { address: '127.0.0.1', inbound: [{ port, tags: { service: 'greeter' } }] } });
    for (const name of ['caller-js', 'caller-py']) await harness.cp.apply({ type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1' } });
    const [server, js, py] = await Promise.all(['greeter-1', 'caller-js', 'caller-py'].map(agentFor));

    const [command, args] = tsx('test/fixtures/xds-mtls-server.ts', 'greeter-1', String(port));
    const serving = start(command, args, { GRPC_XDS_BOOTSTRAP: await bootstrapFor('greeter-1', server!.dir) });
    await eventually('the XdsServer serving', () => serving.lines.some((line) => line.includes('"serving"')), { attempts: 600, every: 50 });

    const [jsCommand, jsArgs] = tsx('test/fixtures/xds-mtls-calls.ts', 'greeter', String(CALLING_MS));
    const jsCalls = start(jsCommand, jsArgs, { GRPC_XDS_BOOTSTRAP: await bootstrapFor('caller-js', js!.dir) });
    const pyCalls = start(testPython(), [path.join(ROOT, 'test/fixtures/xds_mtls_calls.py'), 'greeter', String(CALLING_MS)], { GRPC_XDS_BOOTSTRAP: await bootstrapFor('caller-py', py!.dir) });
    const [jsResult, pyResult] = (await Promise.all([jsCalls.exited, pyCalls.exited])).map((line) => JSON.parse(line) as { served: number; peers: string[]; failures: string[]; failed: number });

    // Every RPC served, each with the caller's own certificate presented to the server.
    expect(jsResult).toMatchObject({ failed: 0, peers: ['URI:spiffe://default/dataplane/caller-js'] });
    expect(pyResult).toMatchObject({ failed: 0, peers: ['URI:spiffe://default/dataplane/caller-py'] });
    expect(jsResult!.served).toBeGreaterThan(100);
    expect(pyResult!.served).toBeGreaterThan(100);
    // Inspection says what a gRPC server accepts, and that it cannot be permissive.
    const inspected = await runCli(['inspect', 'default.greeter-1', '--api-address', harness.api]);
    expect(inspected.stdout).toMatch(/^Inbound: {3}accepts strict: an xDS-enabled gRPC server cannot tell TLS from plaintext on one port \(gRFC A36\)/m);
    // The agents renewed while the calls went on.
    for (const { agent } of [server!, js!, py!]) expect(agent.lines.filter((line) => line.startsWith('certificate ')).length).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
