import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../cli/cli-harness.js';
import { envoyBinary, type EnvoyProcess } from '../support/envoy.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startHttpBackend, HttpClient } from '../support/http-backend.js';
import { Traffic } from '../support/traffic.js';
import { enableMtls } from './mtls-support.js';
import { sendTo } from '../mesh/policy-fixtures.js';
import { reaches, SERVICE } from '../support/real-clients/index.js';
import { SidecarMesh, XDS_MODES, type Backend, type Client, type Sidecar } from '../support/real-clients/sidecar-mesh.js';
import { freePort } from '../support/ports.js';

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

/** The sum of every stat of `envoy` whose name matches `pattern`. */
async function sumOf(envoy: EnvoyProcess, pattern: RegExp): Promise<number> {
  let sum = 0;
  for (const [name, value] of await envoy.stats()) if (pattern.test(name)) sum += value;
  return sum;
}

/** The URI SANs of the certificates Envoy's admin `/certs` lists. */
async function certificateUris(envoy: EnvoyProcess): Promise<string[]> {
  const certs = (await (await fetch(`${envoy.admin}/certs`)).json()) as { certificates: Array<{ cert_chain?: Array<{ subject_alt_names?: Array<{ uri?: string }> }> }> };
  return certs.certificates.flatMap((entry) => (entry.cert_chain ?? []).flatMap((cert) => (cert.subject_alt_names ?? []).flatMap((san) => (san.uri === undefined ? [] : [san.uri]))));
}

/** What a plain TCP client gets from `port`: every byte, until the listener closes or resets the connection (or 2 s pass). */
function plainTcp(port: number, request: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(2_000, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A reset is an answer too: Envoy found no filter chain for plaintext.
    socket.on('error', () => {});
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.write(request);
  });
}

const inboundPort = (sidecar: Sidecar) => sidecar.dataplane.networking.inbound![0]!.port;

describe.each(XDS_MODES)('strict mTLS between Envoys over %s', (mode) => {
  let harness: Harness;
  let mesh: SidecarMesh;
  beforeEach(async () => {
    harness = await startHarness();
    await enableMtls(harness.api, { mode: 'strict' });
    mesh = new SidecarMesh(harness.api, harness.xds, mode);
  });
  afterEach(async () => {
    await mesh.stop();
    await harness.stop();
  });

  it('carries requests over mTLS, presents each SPIFFE ID, refuses plaintext, and refuses a server that is not the service', async () => {
    const backends = [await mesh.addBackend('backend-1'), await mesh.addBackend('backend-2')];
    const client = await mesh.addClient('web-1');
    await reaches(client, ['backend-1', 'backend-2']);
    const watch = mesh.watch();
    await client.traffic.calls(20);
    expect(client.traffic.failures).toEqual([]);

    // Envoy's own counters, both sides: every connection was a TLS handshake that verified.
    expect(await client.envoy.stat(`cluster.${SERVICE}.ssl.handshake`)).toBeGreaterThan(0);
    for (const backend of backends) expect(await sumOf(backend.envoy, /^listener\.127\.0\.0\.1_\d+\.ssl\.handshake$/)).toBeGreaterThan(0);
    expect(await certificateUris(backends[0]!.envoy)).toContain(`spiffe://default/${SERVICE}`);
    expect(await certificateUris(client.envoy)).toContain('spiffe://default/dataplane/web-1');
    expect(await client.envoy.stat(`cluster.${SERVICE}.ssl.connection_error`)).toBe(0);

    // chancery inspect shows the certificate the node holds, the one /certs showed.
    const inspected = await runCli(['inspect', 'default.backend-1', '--api-address', harness.api]);
    expect(inspected.stdout).toMatch(/^Identity: {2}spiffe:\/\/default\/echo$/m);
    expect(inspected.stdout).toMatch(/^Inbound: {3}accepts strict$/m);
    // A pure client has no inbound, so nothing is said of one.
    const pureClient = await runCli(['inspect', 'default.web-1', '--api-address', harness.api]);
    expect(pureClient.stdout).toMatch(/^Identity: {2}spiffe:\/\/default\/dataplane\/web-1$/m);
    expect(pureClient.stdout).not.toMatch(/^Inbound:/m);
    const serial = /^Certificate: serial ([0-9a-f]+), issued by CA ca-1, valid until \S+Z, renewed at \S+Z$/m.exec(inspected.stdout)?.[1];
    const certs = (await (await fetch(`${backends[0]!.envoy.admin}/certs`)).json()) as { certificates: Array<{ cert_chain?: Array<{ serial_number?: string }> }> };
    expect(certs.certificates.flatMap((entry) => (entry.cert_chain ?? []).map((cert) => cert.serial_number))).toContain(serial);

    // Plaintext straight to a backend's inbound reaches no app: the listener has only its mTLS chain.
    const served = backends[0]!.app.served;
    const answer = await plainTcp(inboundPort(backends[0]!), 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(answer).not.toMatch(/^HTTP\//);
    expect(backends[0]!.app.served).toBe(served);

    // A server whose certificate names another service: the client's SAN check refuses it.
    const impostorApp = await startHttpBackend('impostor');
    const port = await freePort();
    await mesh.start({ type: 'Dataplane', mesh: 'default', name: 'impostor', networking: { address: '127.0.0.1', inbound: [{ port, servicePort: impostorApp.port, tags: { service: 'payments' } }] } }, 1);
    // `vault` claims the impostor's address and port; no Envoy of its own, so no certificate naming it exists.
    await mesh.put({ type: 'Dataplane', mesh: 'default', name: 'vault-1', networking: { address: '127.0.0.1', inbound: [{ port, tags: { service: 'vault' } }] } });
    const victimPort = await freePort();
    const victim = await mesh.start({ type: 'Dataplane', mesh: 'default', name: 'web-2', networking: { address: '127.0.0.1', outbound: [{ port: victimPort, service: 'vault' }] } }, 1);
    const calls = new Traffic(new HttpClient(victimPort));
    await victim.envoy.waitFor('a refused SAN', async () => {
      await calls.call();
      return (await victim.envoy.stat('cluster.vault.ssl.fail_verify_san')) > 0;
    });
    expect(calls.servedBy).toEqual([]);
    expect(impostorApp.served).toBe(0);
    await impostorApp.stop();

    expect(await watch.end()).toEqual([]);
  });

  it('keeps mTLS to a service a route sends the calls to, one the client has no outbound for', async () => {
    // echo and payments speak HTTP, so a MeshHTTPRoute applies to calls to echo.
    const app = async (name: string, service: string) => {
      const backend = await startHttpBackend(name);
      const inbound = [{ port: await freePort(), servicePort: backend.port, tags: { service, protocol: 'http' } }];
      await mesh.start({ type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1', inbound } }, 1);
      return backend;
    };
    const [echo, payments] = [await app('echo-1', SERVICE), await app('payments-1', 'payments')];
    const client = await mesh.addClient('web-1');
    await reaches(client, ['echo-1']);
    await harness.cp.apply(sendTo('echo-to-payments', SERVICE, 'payments'));
    await client.traffic.until('a call served by payments', (recent) => recent[0] === 'payments-1');
    const before = client.traffic.failures.length;
    await client.traffic.calls(20);
    // Every call reached payments' strict inbound over mTLS, which a plaintext cluster could not.
    expect(client.traffic.failures.slice(before)).toEqual([]);
    expect(client.traffic.servedBy.slice(-20)).toEqual(Array(20).fill('payments-1'));
    expect(await client.envoy.stat('cluster.payments.ssl.handshake')).toBeGreaterThan(0);
    expect(payments.served).toBeGreaterThanOrEqual(20);
    await Promise.all([echo.stop(), payments.stop()]);
  });
});
