import { createPrivateKey, X509Certificate } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/cli-harness.js';
import { startHarness, type Harness } from '../support/harness.js';
import { eventually } from '../support/traffic.js';

let harness: Harness;
let dir: string;
let tokenFile: string;
beforeAll(async () => {
  harness = await startHarness();
  dir = mkdtempSync(path.join(tmpdir(), 'chancery-agent-'));
  await harness.cp.apply({ type: 'Mesh', name: 'secure', dataplaneAuth: 'token', mtls: { mode: 'strict', certificateTTL: '1h' } });
  await harness.cp.apply({ type: 'Dataplane', mesh: 'secure', name: 'api-1', networking: { address: '127.0.0.1', inbound: [{ port: 50051, tags: { service: 'api' } }] } });
  await eventually('the mesh’s CA', () => harness.cp.list('CertificateAuthority', 'secure').length === 1);
  const issued = await fetch(`http://${harness.api}/meshes/secure/dataplanes/api-1/token`, { method: 'POST' });
  tokenFile = path.join(dir, 'api-1.token');
  writeFileSync(tokenFile, ((await issued.json()) as { token: string }).token);
});
afterAll(async () => {
  await harness.stop();
  rmSync(dir, { recursive: true, force: true });
});

const agent = (...argv: string[]) => runCli(['agent', '--node', 'secure.api-1', '--api-address', harness.api, ...argv]);

describe('chancery agent', () => {
  it('is refused without the dataplane’s own credentials, writing nothing', async () => {
    const out = path.join(dir, 'refused');
    const { code, stderr } = await agent('--dir', out, '--once');
    expect(code).toBe(1);
    expect(stderr).toMatch(/CHANCERY_IDENTITY_DATAPLANE_UNAUTHENTICATED \(HTTP 401\).*requires a dataplane token/);
    expect(() => readdirSync(out)).toThrow();
  });

  it('makes the key on its host, gets a certificate for the dataplane’s SPIFFE ID by a CSR, and swaps the three files at once', async () => {
    const out = path.join(dir, 'files');
    const first = await agent('--dir', out, '--token-file', tokenFile, '--once');
    expect(first, first.stderr).toMatchObject({ code: 0, stdout: expect.stringMatching(/^certificate [0-9a-f]+ for secure\.api-1 written to .*, valid until \S+; renewed at \S+\n$/) });
    const read = (file: string) => readFileSync(path.join(out, file), 'utf8');
    const certificate = new X509Certificate(read('cert-chain.pem'));
    const key = read('key.pem');
    expect(certificate.subjectAltName).toBe('URI:spiffe://secure/api');
    expect(certificate.checkPrivateKey(createPrivateKey(key))).toBe(true);
    const ca = harness.cp.list('CertificateAuthority', 'secure')[0]!.resource as { name: string; certificate: string };
    expect(read('root-cert.pem')).toBe(`${ca.certificate}\n`);
    expect(certificate.verify(new X509Certificate(ca.certificate).publicKey)).toBe(true);
    expect(statSync(path.join(out, 'key.pem')).mode & 0o777).toBe(0o600);
    // Its status, before any session of the node reported: the CA it holds, and the inbound a new
    // node of a strict mesh starts with, so clients call it over mTLS from the first (were it
    // plaintext, they would call a strict server in plaintext until its session reports).
    expect(harness.cp.get({ type: 'DataplaneTls', mesh: 'secure', name: 'api-1' })?.resource).toMatchObject({ issuer: ca.name, trusts: [ca.name], inbound: 'strict' });
    // Every file is read through one link, which a renewal replaces in one rename.
    for (const file of ['cert-chain.pem', 'key.pem', 'root-cert.pem']) expect(lstatSync(path.join(out, file)).isSymbolicLink()).toBe(true);

    const second = await agent('--dir', out, '--token-file', tokenFile, '--once');
    expect(second.code).toBe(0);
    expect(read('key.pem')).not.toBe(key);
    expect(new X509Certificate(read('cert-chain.pem')).checkPrivateKey(createPrivateKey(read('key.pem')))).toBe(true);
    // The previous version stays for a reader that resolved the link just before; older ones go.
    await agent('--dir', out, '--token-file', tokenFile, '--once');
    expect(readdirSync(out).filter((entry) => entry.startsWith('..') && entry !== '..data')).toHaveLength(2);
  });

  it('never lets its private key reach Chancery: not in the store’s events, nor any API answer', async () => {
    const out = path.join(dir, 'secret');
    expect((await agent('--dir', out, '--token-file', tokenFile, '--once')).code).toBe(0);
    // Past the DER header every P-256 PKCS #8 key shares: the private scalar itself.
    const secret = readFileSync(path.join(out, 'key.pem'), 'utf8').replace(/-----[^-]+-----|\s/g, '').slice(48, 88);
    const stored = JSON.stringify(await harness.cp.store.readEvents(0 as never, 10_000));
    const answers = await Promise.all(
      ['/events?limit=1000', '/sessions', '/meshes/secure/ca', '/metrics', '/meshes/secure/dataplanes/api-1'].map(async (route) => (await fetch(`http://${harness.api}${route}`)).text()),
    );
    for (const text of [stored, ...answers]) expect(text.replace(/\s|\\n/g, '')).not.toContain(secret);
    expect(stored).toContain('CertificateAuthority');
  });

  it.each([
    [['agent', '--dir', 'x'], /--node MESH\.NAME is required/],
    [['agent', '--node', 'secure.api-1'], /--dir DIR is required/],
    [['agent', '--node', 'nodots', '--dir', 'x'], /--node: /],
    [['agent', '--node', 'secure.api-1', '--dir', 'x', '--token', 't'], /--token is an API token/],
  ])('refuses %j with a usage error', async (argv, message) => {
    const { code, stderr } = await runCli(argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });
});

describe('chancery bootstrap grpc --certificates', () => {
  it('adds the file_watcher provider reading the agent’s files, and the server listener template', async () => {
    const { code, stdout } = await runCli(['bootstrap', 'grpc', '--node', 'secure.api-1', '--certificates', '/var/run/chancery/', '--api-address', harness.api]);
    expect(code).toBe(0);
    const bootstrap = JSON.parse(stdout);
    expect(bootstrap.certificate_providers).toEqual({
      chancery: {
        plugin_name: 'file_watcher',
        config: {
          certificate_file: '/var/run/chancery/cert-chain.pem',
          private_key_file: '/var/run/chancery/key.pem',
          ca_certificate_file: '/var/run/chancery/root-cert.pem',
          refresh_interval: '5s',
        },
      },
    });
    expect(bootstrap.server_listener_resource_name_template).toBe('grpc/server?xds.resource.listening_address=%s');
    const envoy = await runCli(['bootstrap', 'envoy', '--node', 'secure.api-1', '--certificates', 'x', '--api-address', harness.api]);
    expect(envoy).toMatchObject({ code: 2, stderr: expect.stringMatching(/--certificates applies to grpc/) });
  });
});
