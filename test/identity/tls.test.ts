import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:tls';
import { credentials, status } from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createControlPlane } from '../../src/index.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import { runCli } from '../cli/cli-harness.js';
import { AdsStream } from '../support/ads-client.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { tlsFixture, type TlsFixture } from '../support/identity.js';
import { eventually } from '../support/traffic.js';

/**
 * TLS on both listeners (`xdsTls`, `apiTls`): clients that trust the CA connect, others cannot,
 * mutual TLS asks for a client certificate, and a certificate replaced on disk is served to new
 * connections without a restart.
 */

let tls: TlsFixture;
let harness: Harness | undefined;
beforeEach(async () => {
  tls = await tlsFixture();
});
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
  tls.remove();
});

const trusting = (ca: string, client?: { cert: string; key: string }) =>
  credentials.createSsl(readFileSync(ca), client && readFileSync(client.key), client && readFileSync(client.cert));

/** Opens a stream for `default.backend-1` and resolves with how it went: its first response's type, or its end. */
async function firstAnswer(stream: AdsStream): Promise<string> {
  stream.send({ typeUrl: CLUSTER, nodeId: 'default.backend-1' });
  try {
    return (await stream.nextResponse()).typeUrl;
  } catch {
    return `ended ${stream.ended?.code}`;
  } finally {
    stream.close();
  }
}

/** The fingerprint of the certificate a new TLS connection to `address` is shown. */
function servedFingerprint(address: string, ca: string): Promise<string> {
  const colon = address.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)), ca: readFileSync(ca), servername: 'localhost', ALPNProtocols: ['h2', 'http/1.1'] }, () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

describe('xDS over TLS', () => {
  beforeEach(async () => {
    harness = await startHarness({ xdsTls: { cert: tls.cert, key: tls.key }, tlsReloadInterval: 20 });
    await harness.cp.apply(backendDataplane('backend-1', 10001));
  });

  it('serves a client that trusts the CA, and no client that does not, or that speaks plaintext', async () => {
    expect(await firstAnswer(AdsStream.open(harness!.xds, { channel: trusting(tls.ca) }))).toBe(CLUSTER);
    expect(await firstAnswer(AdsStream.open(harness!.xds, { channel: trusting(tls.otherCa) }))).toBe(`ended ${status.UNAVAILABLE}`);
    expect(await firstAnswer(AdsStream.open(harness!.xds))).toBe(`ended ${status.UNAVAILABLE}`);
  });

  it('serves a certificate replaced on disk to new connections, without a restart, while open streams go on', async () => {
    const served = AdsStream.open(harness!.xds, { channel: trusting(tls.ca) });
    served.send({ typeUrl: CLUSTER, nodeId: 'default.backend-1' });
    await served.nextResponse();
    const before = await servedFingerprint(harness!.xds, tls.ca);
    expect(before).toBe(fingerprintOf(readFileSync(tls.cert, 'utf8')));
    const replaced = fingerprintOf(await tls.reissue());
    await eventually('the new certificate on a new connection', async () => (await servedFingerprint(harness!.xds, tls.ca)) === replaced, { attempts: 200, every: 25 });
    expect(served.ended).toBeUndefined();
    expect(await firstAnswer(AdsStream.open(harness!.xds, { channel: trusting(tls.ca) }))).toBe(CLUSTER);
    served.close();
  });

  it('keeps serving the previous certificate while the files on disk do not make a pair', async () => {
    const before = await servedFingerprint(harness!.xds, tls.ca);
    // A certificate whose key is not the one beside it: as a deploy that wrote one file of two.
    const other = await tlsFixture();
    writeFileSync(tls.cert, readFileSync(other.cert));
    other.remove();
    for (let check = 0; check < 10; check++) expect(await servedFingerprint(harness!.xds, tls.ca)).toBe(before);
  });
});

describe('mutual TLS on xDS (xdsTls.clientCa)', () => {
  it('serves only clients presenting a certificate the client CA signed', async () => {
    harness = await startHarness({ xdsTls: { cert: tls.cert, key: tls.key, clientCa: tls.ca } });
    await harness.cp.apply(backendDataplane('backend-1', 10001));
    expect(await firstAnswer(AdsStream.open(harness.xds, { channel: trusting(tls.ca, await tls.clientCertificate('backend-1')) }))).toBe(CLUSTER);
    expect(await firstAnswer(AdsStream.open(harness.xds, { channel: trusting(tls.ca) }))).toBe(`ended ${status.UNAVAILABLE}`);
  });
});

describe('the API over HTTPS', () => {
  it('answers a CLI that trusts the CA, not one that does not, and reloads its certificate', async () => {
    harness = await startHarness({ apiTls: { cert: tls.cert, key: tls.key }, tlsReloadInterval: 20 });
    const get = (...flags: string[]) => runCli(['get', 'meshes', '--api-address', harness!.api, ...flags]);
    const trusted = await get('--api-ca', tls.ca);
    expect(trusted.code, trusted.stderr).toBe(0);
    expect(trusted.stdout).toContain('default');
    const untrusted = await get('--api-ca', tls.otherCa);
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toMatch(/cannot reach Chancery at .*: (unable to verify|self.signed|certificate)/i);
    expect((await get()).code).toBe(1);
    const replaced = fingerprintOf(await tls.reissue());
    await eventually('the new API certificate', async () => (await servedFingerprint(harness!.api, tls.ca)) === replaced, { attempts: 200, every: 25 });
    expect((await get('--api-ca', tls.ca)).code).toBe(0);
  });

  it('with a client CA, answers only a CLI presenting a client certificate', async () => {
    harness = await startHarness({ apiTls: { cert: tls.cert, key: tls.key, clientCa: tls.ca } });
    const client = await tls.clientCertificate('operator');
    const get = (...flags: string[]) => runCli(['get', 'meshes', '--api-address', harness!.api, '--api-ca', tls.ca, ...flags]);
    expect((await get('--api-cert', client.cert, '--api-key', client.key)).code).toBe(0);
    expect((await get()).code).toBe(1);
  });
});

describe('TLS files that cannot be served', () => {
  it.each([
    ['a certificate that does not exist', () => ({ cert: `${tls.dir}/missing.crt`, key: tls.key }), /cannot read the TLS files.*missing\.crt/],
    ['a key that is not the certificate’s', async () => ({ cert: tls.cert, key: (await tls.clientCertificate('someone')).key }), /do not make a certificate and its key/],
  ])('make start() reject, naming the files: %s', async (_case, paths, message) => {
    const cp = createControlPlane({ xdsAddress: '127.0.0.1:0', apiAddress: false, store: 'memory', logger: pino({ level: 'silent' }), xdsTls: await paths() });
    await expect(cp.start()).rejects.toMatchObject({ code: 'CHANCERY_IDENTITY_TLS_FILES', message: expect.stringMatching(message) });
    await cp.stop();
  });
});
