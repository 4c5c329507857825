import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiToken } from '../../src/identity/index.js';
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
  tokens.writer = (await issueApiToken(harness.cp.store, { name: 'ci', role: 'writer', meshes: ['payments'], now })).token;
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
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>) };
}

/** Every event of the log, read as the admin. */
async function events(): Promise<Array<{ type: string; name: string; by: { caller?: string }; resource?: Record<string, unknown> }>> {
  return (await call('GET', '/events?limit=1000', { token: tokens.admin })).body!['items'] as never;
}

const dataplane = (mesh: string, name: string) => backendDataplane(name, 10002, 'backend', mesh);

describe('who may call what', () => {
  // [method, path, body, status for admin, writer (of payments), reader]
  const CALLS: ReadonlyArray<readonly [string, string, unknown, number, number, number]> = [
    ['GET', '/meshes', undefined, 200, 200, 200],
    ['GET', '/meshes/payments/dataplanes/backend-1', undefined, 200, 200, 200],
    ['GET', '/sessions', undefined, 200, 200, 200],
    ['GET', '/events', undefined, 200, 200, 200],
    ['GET', '/statechart', undefined, 200, 200, 200],
    ['GET', '/meshes/payments/signing-keys', undefined, 200, 403, 403],
    ['GET', '/api-tokens', undefined, 200, 403, 403],
    ['PUT', '/meshes/payments/dataplanes/web-%s', dataplane('payments', 'web-%s'), 201, 201, 403],
    ['PUT', '/meshes/default/dataplanes/web-%s', dataplane('default', 'web-%s'), 201, 403, 403],
    ['PUT', '/meshes/other-%s', { type: 'Mesh', name: 'other-%s' }, 201, 403, 403],
    ['POST', '/meshes/payments/dataplanes/backend-1/token', {}, 201, 201, 403],
    ['POST', '/meshes/default/dataplanes/backend-1/token', {}, 201, 403, 403],
    ['POST', '/meshes/payments/dataplanes/backend-1/service-account', {}, 201, 201, 403],
    ['POST', '/meshes/payments/signing-keys', {}, 201, 403, 403],
    ['POST', '/api-tokens', { name: 'made-by-%s', role: 'reader' }, 201, 403, 403],
    ['DELETE', '/meshes/payments/dataplanes/web-%s', undefined, 204, 204, 403],
  ];
  const expected = (row: (typeof CALLS)[number], role: 'admin' | 'writer' | 'reader') => row[role === 'admin' ? 3 : role === 'writer' ? 4 : 5];

  it.each(['admin', 'writer', 'reader'] as const)('lets a %s make exactly the calls its role allows, and a refused call changes nothing', async (role) => {
    for (const row of CALLS) {
      const [method, template, body] = row;
      const fill = <T>(value: T): T => JSON.parse(JSON.stringify(value ?? null).replaceAll('%s', role)) ?? undefined;
      const before = (await events()).length;
      const answer = await call(method, template.replaceAll('%s', role), { token: tokens[role], ...(body !== undefined && { body: fill(body) }) });
      expect(answer.status, `${role} ${method} ${template}: ${JSON.stringify(answer.body)}`).toBe(expected(row, role));
      if (answer.status === 403) {
        expect(answer.body).toMatchObject({ code: 'CHANCERY_API_FORBIDDEN' });
        expect((await events()).length).toBe(before);
      }
    }
  });

  it('records the caller of every write as the author of its event', async () => {
    await call('PUT', '/meshes/payments/dataplanes/authored', { token: tokens.writer, body: dataplane('payments', 'authored') });
    await call('POST', '/meshes/payments/dataplanes/authored/token', { token: tokens.admin, body: {} });
    const written = await events();
    expect(written.find((event) => event.type === 'Dataplane' && event.name === 'authored')?.by.caller).toBe('ci');
    // The first token of a mesh brings its first signing key; each write by whoever made it.
    for (const event of written.filter((listed) => listed.by.caller !== undefined)) expect(['ops', 'ci', 'dashboard']).toContain(event.by.caller);
  });

  it('never shows a private key or a token hash, in lists or in the event log', async () => {
    const shown = JSON.stringify([await events(), (await call('GET', '/meshes/payments/signing-keys', { token: tokens.admin })).body, (await call('GET', '/api-tokens', { token: tokens.admin })).body]);
    expect(shown).not.toContain('PRIVATE KEY');
    expect(shown).not.toContain('secretHash');
    expect(shown).toContain('PUBLIC KEY');
  });
});

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
