import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { issueDataplaneToken, rotateSigningKey } from '../../src/identity/index.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import type { StreamCredentials } from '../support/ads-client.js';
import { backendDataplane } from '../support/harness.js';
import { harnessFor } from '../support/harness-for.js';

/**
 * Who may be served on the xDS port (DESIGN §10), through the real gRPC server: a mesh with
 * `dataplaneAuth: token` serves a stream only with a token for its node in the stream's
 * `authorization` metadata; every refusal ends the stream before a single response.
 */

/** Session timers and token expiry share one simulated clock, and the epoch ms it stands for. */
const START = Date.parse('2026-12-03T12:00:00.000Z');
const NODE = 'secure.backend-1';
const PROTOCOLS = ['sotw', 'delta'] as const;

let clock: SimulatedClock;
const now = () => START + clock.now();
const harness = harnessFor(() => ({
  now,
  clock: (clock = new SimulatedClock()),
  resources: [{ type: 'Mesh', name: 'secure' }, backendDataplane('backend-1', 10001, 'backend', 'secure'), backendDataplane('backend-2', 10002, 'backend', 'secure')],
}));
const open = (credentials: StreamCredentials, protocol: 'sotw' | 'delta' = 'sotw') => harness.streams.open(protocol, credentials);

async function token(name: string, options: { mesh?: string; ttl?: number; at?: number } = {}): Promise<string> {
  const issued = await issueDataplaneToken(harness.cp.store, { mesh: options.mesh ?? 'secure', name, now: options.at ?? now(), ...(options.ttl !== undefined && { ttl: options.ttl }) });
  return issued.token;
}

const bearer = (value: string) => ({ authorization: `Bearer ${value}` });

/** The refused streams as `GET /sessions` lists them beside the sessions. */
async function refusedStreams(): Promise<{ total: number; recent: Array<Record<string, unknown>> }> {
  const response = await fetch(`http://${harness.api}/sessions`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { refused: { total: number; recent: Array<Record<string, unknown>> } }).refused;
}

/** A JWT with one part replaced, base64url-encoded as the rest. */
function withPart(jwt: string, index: 0 | 1 | 2, replace: (decoded: string) => string): string {
  const parts = jwt.split('.');
  parts[index] = Buffer.from(replace(Buffer.from(parts[index]!, 'base64url').toString('latin1')), 'latin1').toString('base64url');
  return parts.join('.');
}

/** `text` with its first character's bits flipped: always another character (an 'x' put in its place stays the same one time in 256). */
const flipFirst = (text: string) => String.fromCharCode(text.charCodeAt(0) ^ 0xff) + text.slice(1);

/** Opens a stream as `node`, waits for its end, and checks nothing was sent on it and no session was made. */
async function refused(credentials: StreamCredentials, node = NODE, protocol: 'sotw' | 'delta' = 'sotw') {
  const stream = open(credentials, protocol);
  stream.send({ typeUrl: CLUSTER, nodeId: node });
  const end = await stream.ending();
  expect(stream.responses).toEqual([]);
  expect(harness.cp.session(node)).toBeUndefined();
  return end;
}

describe('a mesh requiring tokens (dataplaneAuth: token, what a new mesh is)', () => {
  it('serves a stream whose token names its node, and shows how it was authenticated', async () => {
    const stream = open(bearer(await token('backend-1', { ttl: 3_600_000 })));
    stream.send({ typeUrl: CLUSTER, nodeId: NODE });
    expect((await stream.nextResponse()).typeUrl).toBe(CLUSTER);
    const view = harness.cp.session(NODE);
    expect(view?.state).toBe('serving');
    const [key] = harness.cp.store.list('SigningKey', 'secure');
    expect(view?.stream?.authentication).toEqual({ by: 'token', key: key?.resource.name, expiresAt: new Date(START + 3_600_000).toISOString() });
  });

  it('serves a Delta stream with a token, and refuses one without', async () => {
    const served = open(bearer(await token('backend-1')), 'delta');
    served.send({ typeUrl: CLUSTER, nodeId: NODE });
    expect((await served.nextResponse()).typeUrl).toBe(CLUSTER);
    const end = await refused({}, 'secure.backend-2', 'delta');
    expect(end.code).toBe(status.UNAUTHENTICATED);
  });

  describe.each(PROTOCOLS)('over %s', (protocol) => {
    it.each([
      ['no token', async () => ({}), status.UNAUTHENTICATED, 'token-missing', /mesh "secure" requires a dataplane token/],
      ['a scheme other than Bearer', async () => ({ authorization: `Basic ${await token('backend-1')}` }), status.UNAUTHENTICATED, 'token-malformed', /must be "Bearer <token>"/],
      ['a bearer that is not a JWT', async () => bearer('not-a-jwt'), status.UNAUTHENTICATED, 'token-malformed', /not a JWT/],
      ['a token for another node', async () => bearer(await token('backend-2')), status.PERMISSION_DENIED, 'wrong-node', /for node secure\.backend-2, but the stream's node is secure\.backend-1/],
      ['a token that expired', async () => bearer(await token('backend-1', { ttl: 60_000, at: START - 120_000 })), status.UNAUTHENTICATED, 'token-expired', /expired at 2026-12-03T11:59:00\.000Z/],
      [
        'a token whose subject was changed after signing',
        async () => bearer(withPart(await token('backend-2'), 1, (claims) => claims.replace('secure.backend-2', 'secure.backend-1'))),
        status.UNAUTHENTICATED,
        'token-invalid',
        /does not verify with its key/,
      ],
      ['a token whose signature was altered', async () => bearer(withPart(await token('backend-1'), 2, (signature) => flipFirst(signature))), status.UNAUTHENTICATED, 'token-invalid', /does not verify/],
      [
        'a token naming a key the mesh does not have',
        async () => bearer(withPart(await token('backend-1'), 0, (header) => header.replace(/"kid":"[0-9a-f]+"/, '"kid":"0000"'))),
        status.UNAUTHENTICATED,
        'key-unknown',
        /key "0000" is not one of mesh "secure"'s/,
      ],
      ['an unsigned token (alg none)', async () => bearer(withPart(await token('backend-1'), 0, (header) => header.replace('RS256', 'none'))), status.UNAUTHENTICATED, 'token-malformed', /RS256/],
    ] as const)('refuses %s before sending anything, and records why where GET /sessions and /metrics show it', async (_case, credentials, code, reason, message) => {
      const given = await credentials();
      const before = await refusedStreams();
      const end = await refused(given, NODE, protocol);
      expect(end.code).toBe(code);
      expect(end.details).toMatch(message);
      const after = await refusedStreams();
      expect(after.total).toBe(before.total + 1);
      expect(after.recent[0]).toMatchObject({
        node: NODE,
        code: code === status.UNAUTHENTICATED ? 'UNAUTHENTICATED' : 'PERMISSION_DENIED',
        reason,
        message: expect.stringMatching(message),
        protocol,
        peer: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
      });
      expect(await harness.cp.metrics.text()).toContain(`chancery_xds_stream_refusals_total{reason="${reason}"} 1`);
    });
  });

  it('counts every refused stream in GET /sessions and lists the last 20 of them, newest first', async () => {
    // Alternating protocols mark the order: the clock stands still, so every refusal has the same time.
    const protocolOf = (index: number) => PROTOCOLS[index % 2]!;
    for (let index = 0; index < 23; index++) await refused({}, NODE, protocolOf(index));
    const listed = await refusedStreams();
    expect(listed.total).toBe(23);
    expect(listed.recent.map((refusal) => refusal['protocol'])).toEqual(Array.from({ length: 20 }, (_, index) => protocolOf(22 - index)));
    expect(listed.recent.every((refusal) => refusal['node'] === NODE && refusal['reason'] === 'token-missing')).toBe(true);
  });

  it('refuses a token signed by a removed key: removing a key revokes what it signed', async () => {
    const signed = await token('backend-1');
    const [key] = harness.cp.store.list('SigningKey', 'secure');
    await harness.cp.delete({ type: 'SigningKey', mesh: 'secure', name: key!.resource.name });
    const end = await refused(bearer(signed));
    expect(end.code).toBe(status.UNAUTHENTICATED);
    expect(harness.cp.refusals().recent[0]?.reason).toBe('key-unknown');
  });

  it('keeps tokens of an older key valid after a rotation, and signs new ones with the new key', async () => {
    const older = await token('backend-1');
    const rotated = await rotateSigningKey(harness.cp.store, 'secure');
    const newer = await token('backend-2');
    expect(JSON.parse(Buffer.from(newer.split('.')[0]!, 'base64url').toString()).kid).toBe(rotated.resource.name);
    for (const [name, signed] of [['backend-1', older], ['backend-2', newer]] as const) {
      const stream = open(bearer(signed));
      stream.send({ typeUrl: CLUSTER, nodeId: `secure.${name}` });
      expect((await stream.nextResponse()).typeUrl).toBe(CLUSTER);
    }
  });

  it.each(PROTOCOLS)('ends a %s stream that names another node on a later request, and serves that node nothing', async (protocol) => {
    const stream = open(bearer(await token('backend-1')), protocol);
    stream.send({ typeUrl: CLUSTER, nodeId: NODE });
    const clusters = await stream.nextResponse();
    // An ACK of the first response, naming another node: the request that must not pass.
    stream.send({ typeUrl: CLUSTER, nodeId: 'secure.backend-2', responseNonce: clusters.nonce, ...('versionInfo' in clusters && { versionInfo: clusters.versionInfo }) });
    const end = await stream.ending();
    expect(end.code).toBe(status.PERMISSION_DENIED);
    expect(end.details).toMatch(/node id cannot change on a stream: it opened as secure\.backend-1, then sent secure\.backend-2/);
    expect(stream.responses).toHaveLength(1);
    expect(harness.cp.session('secure.backend-2')).toBeUndefined();
    expect(harness.cp.refusals().recent[0]).toMatchObject({ node: NODE, reason: 'node-changed', protocol });
  });

  it.each(PROTOCOLS)('ends an open %s stream with UNAUTHENTICATED when its token expires, so the client reconnects with a fresh one', async (protocol) => {
    const stream = open(bearer(await token('backend-1', { ttl: 60_000 })), protocol);
    stream.send({ typeUrl: CLUSTER, nodeId: NODE });
    await stream.nextResponse();
    clock.increment(59_999);
    expect(stream.ended).toBeUndefined();
    clock.increment(1);
    const end = await stream.ending();
    expect(end.code).toBe(status.UNAUTHENTICATED);
    expect(end.details).toMatch(/the token expired at 2026-12-03T12:01:00\.000Z; reconnect with a fresh one/);
    expect(stream.responses).toHaveLength(1);
    expect(harness.cp.session(NODE)?.state).toBe('disconnected');
    expect(harness.cp.refusals().recent[0]).toMatchObject({ node: NODE, reason: 'token-expired', protocol });
  });

  it('ends open streams at once when the key that signed their tokens is removed', async () => {
    const stream = open(bearer(await token('backend-1')));
    stream.send({ typeUrl: CLUSTER, nodeId: NODE });
    await stream.nextResponse();
    const [key] = harness.cp.store.list('SigningKey', 'secure');
    await harness.cp.delete({ type: 'SigningKey', mesh: 'secure', name: key!.resource.name });
    const end = await stream.ending();
    expect(end.code).toBe(status.UNAUTHENTICATED);
    expect(end.details).toMatch(/was removed from mesh "secure", revoking the tokens it verified/);
    expect(stream.responses).toHaveLength(1);
  });

  it('deletes its keys with the mesh: a re-created mesh of the same name refuses the old tokens', async () => {
    const signed = await token('backend-1');
    await harness.cp.delete({ type: 'Mesh', mesh: 'secure', name: 'secure' });
    expect(harness.cp.store.list('SigningKey')).toEqual([]);
    await harness.cp.apply({ type: 'Mesh', name: 'secure' });
    await harness.cp.apply(backendDataplane('backend-1', 10001, 'backend', 'secure'));
    const end = await refused(bearer(signed));
    expect(end.code).toBe(status.UNAUTHENTICATED);
    expect(harness.cp.refusals().recent[0]?.reason).toBe('key-unknown');
  });
});

describe('a mesh open to any dataplane (dataplaneAuth: none, the seeded default mesh)', () => {
  it('serves a stream with no token', async () => {
    await harness.cp.apply(backendDataplane('web', 10003));
    const stream = open({});
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.web' });
    expect((await stream.nextResponse()).typeUrl).toBe(CLUSTER);
    expect(harness.cp.session('default.web')?.stream?.authentication).toEqual({ by: 'none' });
  });

  it('ends its open streams with UNAUTHENTICATED when the mesh starts requiring tokens, and sends them nothing more', async () => {
    await harness.cp.apply({ type: 'Mesh', name: 'opening', dataplaneAuth: 'none' });
    await harness.cp.apply(backendDataplane('app', 10004, 'app', 'opening'));
    const stream = open({});
    stream.send({ typeUrl: CLUSTER, nodeId: 'opening.app' });
    await stream.nextResponse();
    await harness.cp.apply({ type: 'Mesh', name: 'opening', dataplaneAuth: 'token' });
    const end = await stream.ending();
    expect(end.code).toBe(status.UNAUTHENTICATED);
    expect(end.details).toMatch(/mesh "opening" now requires a dataplane token; reconnect with one/);
    expect(stream.responses).toHaveLength(1);
    expect(harness.cp.refusals().recent[0]).toMatchObject({ node: 'opening.app', reason: 'auth-required' });
  });
});
