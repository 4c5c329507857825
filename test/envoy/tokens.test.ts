import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { issueDataplaneToken } from '../../src/identity/index.js';
import { runCli } from '../cli/cli-harness.js';
import { EnvoyProcess, envoyBinary, stopAllEnvoys } from '../support/envoy.js';
import { startHarness, type Harness } from '../support/harness.js';
import { responsesWritten, tlsFixture, type TlsFixture } from '../support/identity.js';
import { freePort } from '../support/ports.js';
import { XDS_MODES } from '../support/real-clients/sidecar-mesh.js';
import { eventually } from '../support/traffic.js';

/**
 * A real, unchanged Envoy proving who it is: `chancery bootstrap envoy --token-file` puts a
 * dataplane token into the ADS stream's initial metadata, and `--xds-ca-file` makes it dial
 * Chancery over TLS, checking the certificate and the name dialled. With a token that is not
 * its own, expired, signed by a removed key, altered, or none, Envoy is refused and holds no
 * configuration at all: Chancery never opened a session for it, so nothing was sent.
 */

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

let tls: TlsFixture;
let harness: Harness;
let dir: string;

beforeAll(async () => {
  tls = await tlsFixture();
  dir = mkdtempSync(path.join(tmpdir(), 'chancery-envoy-tokens-'));
  harness = await startHarness({ xdsTls: { cert: tls.cert, key: tls.key } });
  await harness.cp.apply({ type: 'Mesh', name: 'secure' });
  for (const name of ['web', 'other']) {
    await harness.cp.apply({ type: 'Dataplane', mesh: 'secure', name, networking: { address: '127.0.0.1', inbound: [{ port: await freePort(), tags: { service: name } }] } });
  }
});
afterEach(() => stopAllEnvoys());
afterAll(async () => {
  await harness.stop();
  tls.remove();
  rmSync(dir, { recursive: true, force: true });
});

/** `chancery bootstrap envoy` for secure.web, as a user runs it: the token from a file, TLS to Chancery. */
async function bootstrap(token: string | undefined, mode: 'sotw' | 'delta' = 'sotw', xds?: string): Promise<string> {
  const argv = ['bootstrap', 'envoy', '--node', 'secure.web', '--admin-port', '0', '--xds-ca-file', tls.ca, '--api-address', harness.api];
  if (mode === 'delta') argv.push('--delta');
  if (xds !== undefined) argv.push('--xds', xds);
  if (token !== undefined) {
    const file = path.join(dir, `token-${Math.random().toString(36).slice(2, 8)}`);
    writeFileSync(file, `${token}\n`);
    argv.push('--token-file', file);
  }
  const printed = await runCli(argv);
  expect(printed.code, printed.stderr).toBe(0);
  return printed.stdout;
}

async function token(name: string, options: { ttl?: number; at?: number } = {}): Promise<string> {
  return (await issueDataplaneToken(harness.cp.store, { mesh: 'secure', name, now: options.at ?? Date.now(), ...(options.ttl !== undefined && { ttl: options.ttl }) })).token;
}

const pushes = () => responsesWritten(harness.cp);

describe.each(XDS_MODES)('a real Envoy with its dataplane token, over TLS, speaking %s', (mode) => {
  it('is served: it holds its listener, and Chancery shows it authenticated by token', async () => {
    const envoy = await EnvoyProcess.start('web', await bootstrap(await token('web'), mode));
    await envoy.waitFor('its inbound listener', async () => (await envoy.configDump()).listeners.length > 0);
    const session = harness.cp.session('secure.web');
    expect(session?.stream?.protocol).toBe(mode);
    expect(session?.stream?.authentication.by).toBe('token');
    expect(await envoy.stat('control_plane.connected_state')).toBe(1);
  });
});

describe('a real Envoy dialling Chancery by name', () => {
  it('reaches Chancery listening on 127.0.0.1 at localhost:<port>, the name its certificate gives, and is served', async () => {
    // Envoy resolves localhost to ::1 alone unless told to prefer IPv4 (dns_lookup_family).
    const port = harness.xds.slice(harness.xds.lastIndexOf(':') + 1);
    const envoy = await EnvoyProcess.start('web', await bootstrap(await token('web'), 'sotw', `localhost:${port}`));
    await envoy.waitFor('its inbound listener', async () => (await envoy.configDump()).listeners.length > 0);
    expect(harness.cp.session('secure.web')?.stream?.authentication.by).toBe('token');
    expect(await envoy.stat('cluster.chancery-xds.upstream_cx_connect_fail')).toBe(0);
  });
});

describe('a real Envoy refused for its token', () => {
  it.each([
    ['with no token', async (): Promise<string | undefined> => undefined, 'token-missing', status.UNAUTHENTICATED],
    ["with another dataplane's token", async () => token('other'), 'wrong-node', status.PERMISSION_DENIED],
    ['with an expired token', async () => token('web', { ttl: 60_000, at: Date.now() - 120_000 }), 'token-expired', status.UNAUTHENTICATED],
    [
      'with an altered token (its subject changed)',
      async (): Promise<string> => {
        const [header, claims, signature] = (await token('other')).split('.');
        const altered = Buffer.from(Buffer.from(claims!, 'base64url').toString().replace('secure.other', 'secure.web')).toString('base64url');
        return `${header}.${altered}.${signature}`;
      },
      'token-invalid',
      status.UNAUTHENTICATED,
    ],
    [
      'with a token signed by a removed key',
      async (): Promise<string> => {
        const signed = await token('web');
        for (const key of harness.cp.store.list('SigningKey', 'secure')) await harness.cp.delete({ type: 'SigningKey', mesh: 'secure', name: key.resource.name });
        return signed;
      },
      'key-unknown',
      status.UNAUTHENTICATED,
    ],
  ] as const)('%s: holds no configuration, and was sent nothing', async (_case, tokenOf, reason, code) => {
    const given = await tokenOf();
    const before = { pushes: await pushes(), stream: harness.cp.session('secure.web')?.stream?.id };
    const envoy = await EnvoyProcess.start('web', await bootstrap(given));
    // Envoy retries with back-off; two refusals show it was refused and tried again.
    await eventually(
      `two refusals of secure.web (${reason})`,
      () => harness.cp.refusals().recent.filter((refused) => refused.node === 'secure.web' && refused.reason === reason).length >= 2,
      { attempts: 300, every: 50 },
    );
    // Envoy's own word: every close of its ADS stream it logged carries the refusal's status.
    const closes = () => [...envoy.output().matchAll(/gRPC config stream to chancery-xds closed: (\d+),/g)].map((match) => Number(match[1]));
    await envoy.waitFor('a logged close of its ADS stream', () => closes().length > 0);
    expect(closes()).toEqual(closes().map(() => code));
    expect(await envoy.configDump()).toEqual({ listeners: [], clusters: [], endpoints: [] });
    // A response Envoy received would count as an update accepted or rejected.
    for (const stat of ['listener_manager.lds.update_success', 'listener_manager.lds.update_rejected', 'cluster_manager.cds.update_success', 'cluster_manager.cds.update_rejected']) {
      expect(await envoy.stat(stat), stat).toBe(0);
    }
    expect(await pushes()).toBe(before.pushes);
    expect(harness.cp.session('secure.web')?.stream?.id).toBe(before.stream);
  });
});
