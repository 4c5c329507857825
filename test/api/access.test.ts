import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiToken } from '../../src/identity/index.js';
import { asSeq } from '../../src/store/index.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import { AdsStream } from '../support/ads-client.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';

/**
 * The HTTP API with `apiAuth: token` (DESIGN §10): every route but the probes, the scrape and the
 * UI's files needs an API token; an admin may do anything, a writer write its meshes, a reader
 * read. A refused call changes nothing, and every write's event names its caller.
 */

let harness: Harness;
const tokens: Record<'admin' | 'writer' | 'reader', string> = { admin: '', writer: '', reader: '' };

beforeAll(async () => {
  harness = await startHarness({ apiAuth: 'token' });
  const now = Date.now();
  tokens.admin = (await issueApiToken(harness.cp.store, { name: 'ops', role: 'admin', now })).token;
  tokens.writer = (await issueApiToken(harness.cp.store, { name: 'ci', role: 'writer', meshes: ['payments', 'gone-writer'], now })).token;
  tokens.reader = (await issueApiToken(harness.cp.store, { name: 'dashboard', role: 'reader', now })).token;
  await harness.cp.apply({ type: 'Mesh', name: 'payments' });
  await harness.cp.apply(backendDataplane('backend-1', 10001, 'backend', 'payments'));
});
afterAll(() => harness.stop());

async function call(method: string, path: string, options: { token?: string; authorization?: string; body?: unknown } = {}) {
  const authorization = options.authorization ?? (options.token === undefined ? undefined : `Bearer ${options.token}`);
  const response = await fetch(`http://${harness.api}${path}`, {
    method,
    headers: { ...(authorization && { authorization }), ...(options.body !== undefined && { 'content-type': 'application/json' }) },
    ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  const json = response.headers.get('content-type')?.startsWith('application/json') === true;
  return { status: response.status, headers: response.headers, body: text === '' || !json ? undefined : (JSON.parse(text) as Record<string, unknown>) };
}

/** Every event of the log, read as the admin. */
async function events(): Promise<Array<{ type: string; name: string; by: { caller?: string }; resource?: Record<string, unknown> }>> {
  return (await call('GET', '/events?limit=1000', { token: tokens.admin })).body!['items'] as never;
}

const dataplane = (mesh: string, name: string) => backendDataplane(name, 10002, 'backend', mesh);

describe('who may call what', () => {
  /** Every caller the matrix runs as: the three roles, no token at all, and an admin's token that expired. */
  const CALLERS = ['admin', 'writer', 'reader', 'anonymous', 'expired'] as const;
  type Caller = (typeof CALLERS)[number];
  /** The name each caller's writes must be authored by. */
  const NAMES = { admin: 'ops', writer: 'ci', reader: 'dashboard' } as const;

  /**
   * One row per kind of endpoint: method, path and body (`%s` is the caller, `{…}` a key made for
   * it in `beforeAll`), and the status for an admin, a writer of payments (and of gone-writer),
   * and a reader. Without a valid token every one is 401. A 404 shows the role was let through to
   * a thing that does not exist; it writes nothing either.
   */
  const CALLS: ReadonlyArray<readonly [string, string, unknown, number, number, number]> = [
    // Reads: every role.
    ['GET', '/meshes', undefined, 200, 200, 200],
    ['GET', '/meshes/payments', undefined, 200, 200, 200],
    ['GET', '/meshes/payments/dataplanes', undefined, 200, 200, 200],
    ['GET', '/meshes/default/dataplanes', undefined, 200, 200, 200],
    ['GET', '/meshes/payments/dataplanes/backend-1', undefined, 200, 200, 200],
    ['GET', '/meshes/payments/history', undefined, 200, 200, 200],
    ['GET', '/meshes/payments/dataplanes/backend-1/history', undefined, 200, 200, 200],
    ['GET', '/meshes/payments/dataplanes/backend-1/bootstrap?format=envoy', undefined, 200, 200, 200],
    ['GET', '/meshes/payments/dataplanes/backend-1/bootstrap?format=grpc', undefined, 200, 200, 200],
    ['GET', '/meshes/payments/service-account-keys', undefined, 200, 200, 200],
    ['GET', '/events', undefined, 200, 200, 200],
    ['GET', '/sessions', undefined, 200, 200, 200],
    ['GET', '/sessions?scope=fleet', undefined, 200, 200, 200],
    ['GET', '/sessions/default.viewer', undefined, 200, 200, 200],
    ['GET', '/sessions/default.viewer/xds', undefined, 200, 200, 200],
    ['GET', '/sessions/default.viewer/history', undefined, 200, 200, 200],
    ['GET', '/sessions/events', undefined, 200, 200, 200],
    ['GET', '/statechart', undefined, 200, 200, 200],
    ['GET', '/instances', undefined, 200, 200, 200],
    ['GET', '/revisions/1', undefined, 200, 200, 200],
    ['GET', '/diff?from=1', undefined, 200, 200, 200],
    // Reverting: a writer's token must cover the mesh it reverts, so it names one.
    ['POST', '/revisions/1/revert?mesh=payments&dryRun=true', undefined, 200, 200, 403],
    ['POST', '/revisions/1/revert?dryRun=true', undefined, 200, 403, 403],
    // Reads of what only an admin manages.
    ['GET', '/meshes/payments/signing-keys', undefined, 200, 403, 403],
    ['GET', '/api-tokens', undefined, 200, 403, 403],
    // Meshes.
    ['PUT', '/meshes/payments', { type: 'Mesh', name: 'payments' }, 200, 200, 403],
    ['PUT', '/meshes/other-%s', { type: 'Mesh', name: 'other-%s' }, 201, 403, 403],
    ['DELETE', '/meshes/gone-%s', undefined, 204, 204, 403],
    ['DELETE', '/meshes/absent', undefined, 404, 403, 403],
    // Dataplanes, in the writer's mesh and in another.
    ['PUT', '/meshes/payments/dataplanes/web-%s', dataplane('payments', 'web-%s'), 201, 201, 403],
    ['PUT', '/meshes/default/dataplanes/web-%s', dataplane('default', 'web-%s'), 201, 403, 403],
    ['PUT', '/meshes/payments/dataplanes/sneak-%s', dataplane('default', 'sneak-%s'), 400, 400, 403],
    ['DELETE', '/meshes/payments/dataplanes/web-%s', undefined, 204, 204, 403],
    ['DELETE', '/meshes/default/dataplanes/web-%s', undefined, 204, 403, 403],
    // A change of several resources: a writer's token must cover every mesh it writes.
    ['POST', '/apply', { items: [dataplane('payments', 'batch-%s')] }, 200, 200, 403],
    ['POST', '/apply', { items: [dataplane('payments', 'both-%s'), dataplane('default', 'both-%s')] }, 200, 403, 403],
    ['POST', '/apply?dryRun=true', { items: [dataplane('default', 'preview-%s')] }, 200, 403, 403],
    // Dataplane tokens and service accounts.
    ['POST', '/meshes/payments/dataplanes/backend-1/token', {}, 201, 201, 403],
    ['POST', '/meshes/default/dataplanes/viewer/token', {}, 201, 403, 403],
    ['POST', '/meshes/payments/dataplanes/backend-1/service-account', {}, 201, 201, 403],
    ['POST', '/meshes/default/dataplanes/viewer/service-account', {}, 201, 403, 403],
    ['DELETE', '/meshes/payments/service-account-keys/{payments-account}', undefined, 204, 204, 403],
    ['DELETE', '/meshes/default/service-account-keys/{default-account}', undefined, 204, 403, 403],
    // Signing keys and API tokens: an admin's alone.
    ['POST', '/meshes/payments/signing-keys', {}, 201, 403, 403],
    ['DELETE', '/meshes/payments/signing-keys/{signing-key}', undefined, 204, 403, 403],
    ['POST', '/api-tokens', { name: 'made-by-%s', role: 'reader' }, 201, 403, 403],
    ['DELETE', '/api-tokens/doomed-%s', undefined, 204, 403, 403],
  ];
  /** Open to anyone, with a token or without. */
  const OPEN = ['/healthz', '/readyz', '/metrics', '/ui', '/ui/app.js'];

  /** Per caller: the service-account keys and the signing key its DELETE rows remove. */
  const made: Record<Caller, Record<string, string>> = { admin: {}, writer: {}, reader: {}, anonymous: {}, expired: {} };
  let expired = '';
  let viewer: AdsStream;

  beforeAll(async () => {
    expired = (await issueApiToken(harness.cp.store, { name: 'lapsed', role: 'admin', ttl: 1_000, now: Date.now() - 60_000 })).token;
    await harness.cp.apply(backendDataplane('viewer', 10003));
    // A live session, for the /sessions/{node} routes.
    viewer = AdsStream.open(harness.xds);
    viewer.send({ typeUrl: CLUSTER, nodeId: 'default.viewer' });
    await viewer.nextResponse();
    for (const caller of CALLERS) {
      await harness.cp.apply({ type: 'Mesh', name: `gone-${caller}` });
      await issueApiToken(harness.cp.store, { name: `doomed-${caller}`, role: 'reader', now: Date.now() });
      const account = async (mesh: string, name: string) => ((await call('POST', `/meshes/${mesh}/dataplanes/${name}/service-account`, { token: tokens.admin, body: {} })).body!['private_key_id'] as string);
      made[caller]['payments-account'] = await account('payments', 'backend-1');
      made[caller]['default-account'] = await account('default', 'viewer');
      made[caller]['signing-key'] = (await call('POST', '/meshes/payments/signing-keys', { token: tokens.admin, body: {} })).body!['kid'] as string;
    }
  });
  afterAll(() => viewer.close());

  const tokenOf = (caller: Caller): string | undefined => (caller === 'anonymous' ? undefined : caller === 'expired' ? expired : tokens[caller]);
  const expected = (row: (typeof CALLS)[number], caller: Caller) => (caller === 'anonymous' || caller === 'expired' ? 401 : row[caller === 'admin' ? 3 : caller === 'writer' ? 4 : 5]);
  const fill = (text: string, caller: Caller) => text.replaceAll('%s', caller).replace(/\{([a-z-]+)\}/g, (_, key: string) => made[caller][key]!);
  const storedEvents = () => harness.cp.store.readEvents(asSeq(0), 1_000_000);

  it.each(CALLERS)('lets the %s make exactly the calls it may; a refused call stores nothing, and each write is authored by its caller', async (caller) => {
    const token = tokenOf(caller);
    for (const row of CALLS) {
      const [method, template, body] = row;
      const path = fill(template, caller);
      const before = (await storedEvents()).length;
      const answer = path === '/sessions/events' ? await openFeed(token) : await call(method, path, { ...(token !== undefined && { token }), ...(body !== undefined && { body: JSON.parse(fill(JSON.stringify(body), caller)) }) });
      const status = expected(row, caller);
      expect(answer.status, `${caller} ${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status);
      const written = (await storedEvents()).slice(before);
      if (status === 401) expect(answer.body).toMatchObject({ code: 'CHANCERY_API_UNAUTHENTICATED' });
      if (status === 403) expect(answer.body).toMatchObject({ code: 'CHANCERY_API_FORBIDDEN' });
      // A dry run, and a write identical to what is stored (the second caller's PUT of the same Mesh), store nothing either.
      const storesNothing = method === 'GET' || status >= 400 || path.includes('dryRun=true') || ('headers' in answer && (answer.headers as Headers).get('chancery-outcome') === 'unchanged');
      if (storesNothing) {
        expect(written, `${caller} ${method} ${path} stored something`).toEqual([]);
      } else {
        // Issuing a token writes only when it makes the mesh's first signing key.
        if (!path.endsWith('/token')) expect(written.length, `${caller} ${method} ${path} stored nothing`).toBeGreaterThan(0);
        for (const event of written) expect(event.by.caller, `${caller} ${method} ${path}`).toBe(NAMES[caller as keyof typeof NAMES]);
      }
    }
    for (const path of OPEN) expect((await fetch(`http://${harness.api}${path}`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } })).status, `${caller} ${path}`).toBe(200);
  });

  it("records each caller as the author of its own writes, in a resource's history", async () => {
    const path = '/meshes/payments/dataplanes/authored';
    expect((await call('PUT', path, { token: tokens.writer, body: dataplane('payments', 'authored') })).status).toBe(201);
    expect((await call('PUT', path, { token: tokens.admin, body: backendDataplane('authored', 10004, 'backend', 'payments') })).status).toBe(200);
    expect((await call('DELETE', path, { token: tokens.writer })).status).toBe(204);
    const { items } = (await call('GET', `${path}/history`, { token: tokens.reader })).body as { items: Array<{ kind: string; version: number; by: { caller?: string } }> };
    expect(items.map((event) => [event.kind, event.by.caller])).toEqual([
      ['upserted', NAMES.writer],
      ['upserted', 'ops'],
      ['deleted', NAMES.writer],
    ]);
    const [first, second] = items;
    expect([first?.version, second?.version]).toEqual([1, 2]);
  });

  it("records the writer who issued a mesh's first dataplane token as the author of the signing key it made", async () => {
    expect((await call('PUT', '/meshes/keyless', { token: tokens.admin, body: { type: 'Mesh', name: 'keyless' } })).status).toBe(201);
    await harness.cp.apply(backendDataplane('app', 10005, 'app', 'keyless'));
    const writer = (await issueApiToken(harness.cp.store, { name: 'keyless-ci', role: 'writer', meshes: ['keyless'], now: Date.now() })).token;
    const before = (await storedEvents()).length;
    expect((await call('POST', '/meshes/keyless/dataplanes/app/token', { token: writer, body: {} })).status).toBe(201);
    const written = (await storedEvents()).slice(before);
    expect(written.map((event) => [event.key.type, event.by.caller])).toEqual([['SigningKey', 'keyless-ci']]);
  });

  it('never shows a private key or a token hash, in lists or in the event log', async () => {
    const shown = JSON.stringify([await events(), (await call('GET', '/meshes/payments/signing-keys', { token: tokens.admin })).body, (await call('GET', '/api-tokens', { token: tokens.admin })).body]);
    expect(shown).not.toContain('PRIVATE KEY');
    expect(shown).not.toContain('secretHash');
    expect(shown).toContain('PUBLIC KEY');
  });
});

/** Opens the live feed (server-sent events, which never ends) and answers its status, then closes it. */
async function openFeed(token: string | undefined): Promise<{ status: number; body: Record<string, unknown> | undefined }> {
  const controller = new AbortController();
  const response = await fetch(`http://${harness.api}/sessions/events`, { signal: controller.signal, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  const body = response.headers.get('content-type')?.startsWith('application/json') ? ((await response.json()) as Record<string, unknown>) : undefined;
  controller.abort();
  return { status: response.status, body };
}

describe('who is refused', () => {
  it.each([
    ['no Authorization header', undefined, /no Authorization header/],
    ['a scheme other than Bearer', `Basic ${Buffer.from('ops:x').toString('base64')}`, /must be "Bearer <API token>"/],
    ['something that is not an API token', 'Bearer abc', /not a Chancery API token/],
    ['an unknown name', 'Bearer chancery.nobody.c2VjcmV0', /not valid/],
  ])('answers 401, with WWW-Authenticate, to %s', async (_case, authorization, reason) => {
    const answer = await call('GET', '/meshes', authorization === undefined ? {} : { authorization });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="chancery"');
    expect(answer.body).toMatchObject({ code: 'CHANCERY_API_UNAUTHENTICATED', reason: expect.stringMatching(reason) });
  });

  it('answers 401 to a token whose secret is wrong, giving away nothing of which part', async () => {
    const [prefix, name] = tokens.reader.split('.');
    const answer = await call('GET', '/meshes', { token: `${prefix}.${name}.${'A'.repeat(43)}` });
    expect(answer.status).toBe(401);
    expect(answer.body?.['reason']).toBe('the API token is not valid (revoked, or never issued)');
  });

  it('answers 401 to an expired token, and to a revoked one from the moment it is revoked', async () => {
    const expired = await issueApiToken(harness.cp.store, { name: 'old', role: 'reader', ttl: 1_000, now: Date.now() - 60_000 });
    expect((await call('GET', '/meshes', { token: expired.token })).body?.['reason']).toMatch(/"old" expired at/);
    const revoked = await issueApiToken(harness.cp.store, { name: 'leaving', role: 'reader', now: Date.now() });
    expect((await call('GET', '/meshes', { token: revoked.token })).status).toBe(200);
    expect((await call('DELETE', '/api-tokens/leaving', { token: tokens.admin })).status).toBe(204);
    expect((await call('GET', '/meshes', { token: revoked.token })).status).toBe(401);
  });

  it('keeps the probes, the Prometheus scrape and the UI files open, and counts the refusals there', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics', '/ui', '/ui/app.js']) expect((await fetch(`http://${harness.api}${path}`)).status, path).toBe(200);
    const metrics = await (await fetch(`http://${harness.api}/metrics`)).text();
    expect(Number(/^chancery_api_denied_total\{status="401"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(Number(/^chancery_api_denied_total\{status="403"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
  });

  it('takes the token as access_token on the live feed only, which a browser’s EventSource cannot send headers to', async () => {
    expect((await call('GET', `/meshes?access_token=${tokens.reader}`)).status).toBe(401);
    const controller = new AbortController();
    const feed = await fetch(`http://${harness.api}/sessions/events?access_token=${tokens.reader}`, { signal: controller.signal });
    expect(feed.status).toBe(200);
    expect(feed.headers.get('content-type')).toMatch(/text\/event-stream/);
    controller.abort();
  });
});

describe('issuing API tokens', () => {
  it.each([
    [{ name: 'Bad Name', role: 'reader' }, 'name'],
    [{ name: 'w', role: 'writer' }, 'meshes'],
    [{ name: 'r', role: 'reader', meshes: ['payments'] }, 'meshes'],
    [{ name: 'x', role: 'root' }, 'role'],
    [{ name: 'y', role: 'reader', ttl: 'forever' }, 'ttl'],
    [{ name: 'z', role: 'reader', colour: 'blue' }, 'colour'],
    // Never coerced: 123 is not the name "123", nor 42 the mesh "42".
    [{ name: 123, role: 'reader' }, 'name'],
    [{ role: 'reader' }, 'name'],
    [{ name: 'typed', role: 5 }, 'role'],
    [{ name: 'typed', role: 'writer', meshes: [42, true] }, 'meshes[0]'],
    [{ name: 'typed', role: 'writer', meshes: ['payments', null] }, 'meshes[1]'],
    [{ name: 'typed', role: 'writer', meshes: { a: 1 } }, 'meshes'],
    [{ name: 'typed', role: 'writer', meshes: 'payments' }, 'meshes'],
    [['typed'], 'body'],
  ])('refuses %j with 400 naming the field, and stores nothing', async (body, field) => {
    const before = (await events()).length;
    const answer = await call('POST', '/api-tokens', { token: tokens.admin, body });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ field });
    expect((await events()).length).toBe(before);
  });

  it('refuses a name already taken with 409, leaving the first token working', async () => {
    const answer = await call('POST', '/api-tokens', { token: tokens.admin, body: { name: 'ci', role: 'admin' } });
    expect(answer.status).toBe(409);
    expect((await call('GET', '/meshes', { token: tokens.writer })).status).toBe(200);
  });
});

describe('issuing dataplane tokens and service accounts', () => {
  beforeAll(async () => {
    // A mesh with no signing key yet: a token issued for it would make the first one.
    await harness.cp.apply({ type: 'Mesh', name: 'unsigned' });
    await harness.cp.apply(backendDataplane('real', 10006, 'real', 'unsigned'));
  });

  it.each([
    ['a name that is not a DNS label', '/meshes/unsigned/dataplanes/BAD_NAME', 400, 'CHANCERY_API_INVALID_NAME', 'name'],
    ['a name of 250 characters', `/meshes/unsigned/dataplanes/${'a'.repeat(250)}`, 400, 'CHANCERY_API_INVALID_NAME', 'name'],
    ['a name with a mark, a space and a path', `/meshes/unsigned/dataplanes/${encodeURIComponent('✓ x/../')}`, 400, 'CHANCERY_API_INVALID_NAME', 'name'],
    ['a mesh that is not a DNS label', '/meshes/Unsigned/dataplanes/real', 400, 'CHANCERY_API_INVALID_NAME', 'mesh'],
    ['a Dataplane that does not exist', '/meshes/unsigned/dataplanes/ghost', 404, 'CHANCERY_STORE_NOT_FOUND', 'name'],
    ['a mesh that does not exist', '/meshes/nowhere/dataplanes/real', 404, 'CHANCERY_STORE_NOT_FOUND', 'mesh'],
  ])('refuses a token and a service account for %s, naming the field, and stores nothing', async (_what, dataplane, status, code, field) => {
    for (const credential of ['token', 'service-account']) {
      const before = (await events()).length;
      const answer = await call('POST', `${dataplane}/${credential}`, { token: tokens.admin, body: {} });
      expect(answer.status, `${credential}: ${JSON.stringify(answer.body)}`).toBe(status);
      expect(answer.body).toMatchObject({ code, field });
      expect((await events()).length, credential).toBe(before);
    }
  });

  it('issues both for a Dataplane that exists', async () => {
    expect((await call('POST', '/meshes/unsigned/dataplanes/real/token', { token: tokens.admin, body: {} })).body).toMatchObject({ node: 'unsigned.real' });
    expect((await call('POST', '/meshes/unsigned/dataplanes/real/service-account', { token: tokens.admin, body: {} })).body).toMatchObject({ client_email: 'unsigned.real' });
  });
});
