import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/cli-harness.js';
import { startEchoBackend, type EchoBackend } from '../support/echo-backend.js';
import { backendDataplane, clientDataplane, startHarness, type Harness } from '../support/harness.js';
import { responsesWritten, startClientProcess, tlsFixture, type ClientProcess, type TlsFixture } from '../support/identity.js';
import { PROXYLESS_KINDS, type ClientEnvironment, type ProxylessKind } from '../support/real-clients/echo-process.js';
import { eventually } from '../support/traffic.js';
import { budget } from '../support/budget.js';

/**
 * The two proxyless gRPC clients, unchanged, proving who they are to a mesh that requires it
 * (reference/identity.md §2.3): grpc-js-xds and Python's gRPC C-core, each in its own process,
 * dial Chancery over TLS with `google_default` credentials and sign their own RS256 JWT with the
 * service account `chancery bootstrap grpc --credentials-out` wrote for their node. Every refused
 * client gets no session, so nothing at all is sent to it.
 */

const RPC_DEADLINE_MS = 20_000;

let tls: TlsFixture;
let secure: Harness;
/** Shifts the control plane's clock, which checks the JWTs' expiry. */
let skew = 0;
let backend: EchoBackend;
let dir: string;
const running: ClientProcess[] = [];

beforeAll(async () => {
  tls = await tlsFixture();
  dir = mkdtempSync(path.join(tmpdir(), 'chancery-identity-clients-'));
  secure = await startHarness({ xdsTls: { cert: tls.cert, key: tls.key }, now: () => Date.now() + skew });
  backend = await startEchoBackend('backend-1');
  await secure.cp.apply({ type: 'Mesh', name: 'secure' });
  await secure.cp.apply(backendDataplane('backend-1', backend.port, 'backend', 'secure'));
  for (const kind of PROXYLESS_KINDS) for (const role of ['', '-other']) await secure.cp.apply(clientDataplane(`${kind}${role}`, 'secure'));
});

afterAll(async () => {
  for (const client of running) client.kill();
  await secure.stop();
  await backend.stop();
  tls.remove();
  rmSync(dir, { recursive: true, force: true });
});

/** `chancery bootstrap grpc --credentials-out` for `name`, as a user runs it: the variables its env file sets. */
async function credentialsFor(name: string, harness = secure, caFile = tls.ca): Promise<Record<string, string>> {
  const out = path.join(dir, `${name}-${Math.random().toString(36).slice(2, 8)}`);
  const printed = await runCli(['bootstrap', 'grpc', '--node', `secure.${name}`, '--credentials-out', out, '--xds-ca-file', caFile, '--api-address', harness.api]);
  expect(printed.code, printed.stderr).toBe(0);
  const env = Object.fromEntries(readFileSync(path.join(out, 'env'), 'utf8').trim().split('\n').map((line) => line.split('=') as [string, string]));
  expect(printed.stdout).toBe(`${Object.entries(env).map(([key, value]) => `export ${key}=${value}`).join('\n')}\n`);
  return env;
}

function start(kind: ProxylessKind, env: ClientEnvironment, deadlineMs = RPC_DEADLINE_MS): ClientProcess {
  const client = startClientProcess(kind, 'backend', env, deadlineMs);
  running.push(client);
  return client;
}

const pushes = (harness: Harness) => responsesWritten(harness.cp);

/**
 * Runs a client that must be refused: waits for the refusal, and for the client's own trace to
 * show its ADS stream ended with `code`; then checks it got no session (no new stream), Chancery
 * sent nothing, and the client, by its own account, received nothing on any stream.
 */
async function expectRefused(harness: Harness, kind: ProxylessKind, node: string, env: ClientEnvironment, reason: string, code: 'UNAUTHENTICATED' | 'PERMISSION_DENIED') {
  const before = await pushes(harness);
  const stream = harness.cp.session(node)?.stream?.id;
  const client = start(kind, env);
  await eventually(`a refusal of ${node} (${reason})`, () => harness.cp.refusals().recent.some((refused) => refused.node === node && refused.reason === reason), {
    attempts: 400,
    every: 50,
  });
  await eventually(`${kind}'s own trace of its ADS stream ending`, () => client.xds().streamEnds.length > 0, { attempts: 200, every: 50 });
  client.kill();
  const refusals = harness.cp.refusals().recent.filter((refused) => refused.node === node);
  const seen = client.xds();
  // Each end the client saw is one of Chancery's refusals of it: that status, that reason.
  for (const end of seen.streamEnds) {
    expect(end.code).toBe(code);
    expect(refusals.some((refused) => end.details.includes(refused.message)), `${end.details} is none of ${JSON.stringify(refusals)}`).toBe(true);
  }
  expect(seen.responses).toBe(0);
  expect(harness.cp.session(node)?.stream?.id).toBe(stream);
  expect(await pushes(harness)).toBe(before);
  return refusals[0]!;
}

describe.each(PROXYLESS_KINDS)('the unchanged %s client on a mesh requiring tokens', { timeout: budget(60_000) }, (kind) => {
  it('is served over TLS with the service account chancery bootstrap grpc --credentials-out made for it', async () => {
    const client = start(kind, (await credentialsFor(kind)) as unknown as ClientEnvironment);
    expect(await client.outcome).toEqual({ servedBy: 'backend-1' });
    // The trace the refused cases read shows what this client received: LDS, RDS, CDS and EDS at least.
    expect(client.xds().responses).toBeGreaterThanOrEqual(4);
    const [key] = secure.cp.store.list('ServiceAccountKey', 'secure').filter((stored) => stored.resource.dataplane === kind);
    expect(secure.cp.session(`secure.${kind}`)?.stream?.authentication).toMatchObject({ by: 'service-account', key: key?.resource.name });
  });

  it("is refused PERMISSION_DENIED, and sent nothing, with another node's service account", async () => {
    const own = await credentialsFor(kind);
    const other = await credentialsFor(`${kind}-other`);
    const refusal = await expectRefused(secure, kind, `secure.${kind}`, { ...own, GOOGLE_APPLICATION_CREDENTIALS: other['GOOGLE_APPLICATION_CREDENTIALS']! } as unknown as ClientEnvironment, 'wrong-node', 'PERMISSION_DENIED');
    expect(refusal).toMatchObject({ code: 'PERMISSION_DENIED', message: `the token is for node secure.${kind}-other, but the stream's node is secure.${kind}` });
  });

  it('is refused, and sent nothing, once its service account key is removed', async () => {
    const env = await credentialsFor(kind);
    const { private_key_id: kid } = JSON.parse(readFileSync(env['GOOGLE_APPLICATION_CREDENTIALS']!, 'utf8')) as { private_key_id: string };
    await secure.cp.delete({ type: 'ServiceAccountKey', mesh: 'secure', name: kid });
    const refusal = await expectRefused(secure, kind, `secure.${kind}`, env as unknown as ClientEnvironment, 'key-unknown', 'UNAUTHENTICATED');
    expect(refusal.code).toBe('UNAUTHENTICATED');
  });

  it('is refused, and sent nothing, signing with a key other than the one registered under its key id (a forged account)', async () => {
    const env = await credentialsFor(kind);
    const account = JSON.parse(readFileSync(env['GOOGLE_APPLICATION_CREDENTIALS']!, 'utf8')) as Record<string, string>;
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    const forged = path.join(dir, `${kind}-forged.json`);
    writeFileSync(forged, JSON.stringify({ ...account, private_key: privateKey }));
    const refusal = await expectRefused(secure, kind, `secure.${kind}`, { ...env, GOOGLE_APPLICATION_CREDENTIALS: forged } as unknown as ClientEnvironment, 'token-invalid', 'UNAUTHENTICATED');
    expect(refusal.message).toMatch(/does not verify with its key/);
  });

  it('is refused, and sent nothing, when its JWT has expired by the control plane’s clock', async () => {
    const env = await credentialsFor(kind);
    // Both clients sign for an hour from their own clock: two hours on, theirs have expired.
    skew = 2 * 3_600_000;
    try {
      await expectRefused(secure, kind, `secure.${kind}`, env as unknown as ClientEnvironment, 'token-expired', 'UNAUTHENTICATED');
    } finally {
      skew = 0;
    }
  });

  it('cannot connect at all when it does not trust the CA that signed the server certificate', async () => {
    const env = await credentialsFor(kind, secure, tls.otherCa);
    const refusalsBefore = secure.cp.refusals().total;
    const stream = secure.cp.session(`secure.${kind}`)?.stream?.id;
    // It fails the handshake over and over; the RPC waits for resolution until its deadline.
    const client = start(kind, env as unknown as ClientEnvironment, 3_000);
    expect(await client.outcome).toHaveProperty('error');
    expect(client.xds().responses).toBe(0);
    expect(secure.cp.session(`secure.${kind}`)?.stream?.id).toBe(stream);
    expect(secure.cp.refusals().total).toBe(refusalsBefore);
  });
});

describe.each(PROXYLESS_KINDS)('the unchanged %s client without credentials, on a plaintext mesh requiring tokens', { timeout: budget(60_000) }, (kind) => {
  let plain: Harness;
  beforeAll(async () => {
    plain = await startHarness();
    await plain.cp.apply({ type: 'Mesh', name: 'secure' });
    await plain.cp.apply(backendDataplane('backend-1', backend.port, 'backend', 'secure'));
    await plain.cp.apply(clientDataplane(kind, 'secure'));
  });
  afterAll(() => plain.stop());

  it('is refused UNAUTHENTICATED and sent nothing', async () => {
    const printed = await runCli(['bootstrap', 'grpc', '--node', `secure.${kind}`, '--api-address', plain.api]);
    expect(printed.code, printed.stderr).toBe(0);
    const bootstrap = path.join(dir, `${kind}-insecure.json`);
    writeFileSync(bootstrap, printed.stdout);
    const refusal = await expectRefused(plain, kind, `secure.${kind}`, { GRPC_XDS_BOOTSTRAP: bootstrap }, 'token-missing', 'UNAUTHENTICATED');
    expect(refusal.code).toBe('UNAUTHENTICATED');
  });
});
