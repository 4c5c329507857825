import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { credentials, status } from '@grpc/grpc-js';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueServiceAccount, type ServiceAccountFile } from '../../src/identity/index.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { tlsFixture, type TlsFixture } from '../support/identity.js';
import { OpenStreams } from '../support/open-streams.js';

/**
 * The JWT a proxyless gRPC client signs with its service account (reference/identity.md §2.3),
 * signed here by hand to reach each rule: `iss` and `sub` its node, the `kid` a key registered
 * for that node, and an audience naming this server as the gRPC clients spell it.
 */

let tls: TlsFixture;
let secure: Harness;
let plain: Harness;
let account: ServiceAccountFile;
const streams = new OpenStreams();

beforeAll(async () => {
  tls = await tlsFixture();
  secure = await startHarness({ xdsTls: { cert: tls.cert, key: tls.key } });
  plain = await startHarness();
  for (const harness of [secure, plain]) {
    await harness.cp.apply({ type: 'Mesh', name: 'secure' });
    await harness.cp.apply(backendDataplane('client', 10001, 'client', 'secure'));
    await harness.cp.apply(backendDataplane('other', 10002, 'other', 'secure'));
  }
  ({ file: account } = await issueServiceAccount(secure.cp.store, { mesh: 'secure', name: 'client' }));
  // The same key registered with the plaintext instance too, so only the transport differs.
  await plain.cp.store.put(secure.cp.store.list('ServiceAccountKey', 'secure')[0]!.resource);
});
afterAll(async () => {
  streams.closeAll();
  await secure.stop();
  await plain.stop();
  tls.remove();
});

interface Claims {
  readonly iss?: string;
  readonly sub?: string;
  readonly aud?: string;
}

function jwt(claims: Claims): Promise<string> {
  const { iss = account.client_email, sub = account.client_email, aud = `https://localhost/envoy.service.discovery.v3.AggregatedDiscoveryService` } = claims;
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: account.private_key_id })
    .setIssuer(iss)
    .setSubject(sub)
    .setAudience(aud)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(createPrivateKey(account.private_key));
}

/** A stream to `harness` (over TLS to the secure one) carrying `token`, its first request naming `node`. */
function streamOf(harness: Harness, token: string, node: string): AdsStream {
  const channel = harness === secure ? credentials.createSsl(readFileSync(tls.ca)) : undefined;
  const stream = streams.sotw({ address: harness.xds, authorization: `Bearer ${token}`, ...(channel && { channel }) });
  stream.send({ typeUrl: CLUSTER, nodeId: node });
  return stream;
}

describe("a service account's self-signed JWT, over TLS", () => {
  const port = () => secure.xds.slice(secure.xds.lastIndexOf(':') + 1);

  it.each([
    ['grpc-js-xds: https://<host>/<ADS service>', () => 'https://localhost/envoy.service.discovery.v3.AggregatedDiscoveryService'],
    ['gRPC C-core: https://<host>:<port>/', () => `https://127.0.0.1:${port()}/`],
  ])('is served with the audience %s', async (_client, audience) => {
    const stream = streamOf(secure, await jwt({ aud: audience() }), 'secure.client');
    expect((await stream.nextResponse()).typeUrl).toBe(CLUSTER);
    expect(secure.cp.session('secure.client')?.stream?.authentication).toMatchObject({ by: 'service-account', key: account.private_key_id });
  });

  it.each([
    ['an audience naming another host', { aud: 'https://evil.example/' }, status.UNAUTHENTICATED, /audience "https:\/\/evil\.example\/" is not this xDS server/],
    ['an audience with another path', { aud: 'https://localhost/some.other.Service' }, status.UNAUTHENTICATED, /audience/],
    ['an issuer that is not its subject', { iss: 'someone@example.com' }, status.UNAUTHENTICATED, /issuer "someone@example\.com" is not its subject/],
    ['a subject its key does not speak for', { iss: 'secure.other', sub: 'secure.other' }, status.PERMISSION_DENIED, /speaks for secure\.client, not secure\.other/],
  ])('is refused, before anything is sent, with %s', async (_case, claims, code, message) => {
    const node = (claims as Claims).sub ?? 'secure.client';
    const session = secure.cp.session(node)?.stream?.id;
    const refusals = secure.cp.refusals().total;
    const stream = streamOf(secure, await jwt(claims), node);
    const end = await stream.ending();
    expect(end.code).toBe(code);
    expect(end.details).toMatch(message);
    expect(stream.responses).toEqual([]);
    // No stream reached a session, and the refusal is counted where /sessions shows it.
    expect(secure.cp.session(node)?.stream?.id).toBe(session);
    expect(secure.cp.refusals().total).toBe(refusals + 1);
    expect(secure.cp.refusals().recent[0]).toMatchObject({ node, code: status[code] });
  });
});

describe("a service account's self-signed JWT, over plaintext", () => {
  it('is refused: no TLS certificate names a host the audience could be', async () => {
    const stream = streamOf(plain, await jwt({}), 'secure.client');
    const end = await stream.ending();
    expect(end.code).toBe(status.UNAUTHENTICATED);
    expect(end.details).toMatch(/no TLS name/);
    expect(stream.responses).toEqual([]);
  });
});
