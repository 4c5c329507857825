import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { rawBytes, rawHttp } from '../support/raw-http.js';

/**
 * Issue 11's classes of mishandled HTTP input, one test each, against real control planes on
 * the default PGlite store and on the memory store: the two must give the same answers.
 */
const stores = ['pglite:memory', 'memory'] as const;
const planes = new Map<string, Harness>();

beforeAll(async () => {
  for (const store of stores) {
    const harness = await startHarness({ store });
    await harness.cp.apply(backendDataplane('backend-1', 10001));
    planes.set(store, harness);
  }
});
afterAll(async () => {
  for (const harness of planes.values()) await harness.stop();
});

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly allow?: string | null;
}

/** Sends one request to every store's plane; resolves with the one answer they agree on, and checks nothing was stored. */
async function everywhere(path: string, init: RequestInit = {}): Promise<Answer> {
  const answers: Answer[] = [];
  for (const harness of planes.values()) {
    const before = harness.cp.store.projection.revision;
    const response = await fetch(`http://${harness.api}${path}`, init);
    answers.push({ status: response.status, body: (await response.json()) as Record<string, unknown>, allow: response.headers.get('allow') });
    // Read back from the store itself, not the projection: the log has no new event.
    expect(await harness.cp.store.readEvents(before, 10)).toEqual([]);
  }
  expect(answers[1]).toEqual(answers[0]);
  return answers[0]!;
}

const put = (body: string, contentType = 'application/json'): RequestInit => ({ method: 'PUT', headers: { 'content-type': contentType }, body });

/** A Dataplane body, as JSON text, whose inbound has these tags beside `service`. */
function taggedDataplane(tags: Record<string, string>): string {
  return JSON.stringify({ networking: { address: '127.0.0.1', inbound: [{ port: 10002, tags: { service: 'web', ...tags } }] } });
}

const DP = '/meshes/default/dataplanes/web-1';

describe('issue 11: a deeply nested or self-referencing value in name, type or mesh is a 400, not a 500', () => {
  it.each(['name', 'type', 'mesh'])('refuses JSON nested 5,000 deep in %s', async (field) => {
    const answer = await everywhere(DP, put(`{"${field}": ${'['.repeat(5_000)}${']'.repeat(5_000)}}`));
    expect(answer).toMatchObject({ status: 400, body: { code: 'CHANCERY_API_MALFORMED_BODY', reason: 'the body nests deeper than 32 levels' } });
  });

  it('refuses a YAML alias that refers to itself', async () => {
    const answer = await everywhere(DP, put('name: &loop [*loop]\n', 'application/yaml'));
    expect(answer).toMatchObject({ status: 400, body: { code: 'CHANCERY_API_MALFORMED_BODY' } });
  });

  it('names a mismatched identity without serialising it', async () => {
    const answer = await everywhere(DP, put(JSON.stringify({ name: 'x'.repeat(10_000) })));
    expect(answer).toMatchObject({ status: 400, body: { code: 'CHANCERY_API_PATH_MISMATCH', field: 'name' } });
    expect(String(answer.body.reason).length).toBeLessThan(200);
  });
});

describe('issue 11: NUL and lone surrogates are refused by validation, naming the field, on every store alike', () => {
  it.each([
    ['a NUL in a tag value', { zone: 'eu\u0000west' }, 'networking.inbound[0].tags.zone'],
    ['a lone surrogate in a tag value', { zone: 'eu\ud800' }, 'networking.inbound[0].tags.zone'],
    ['a NUL in a tag key', { ['zo\u0000ne']: 'a' }, 'networking.inbound[0].tags["zo\\u0000ne"]'],
    ['a lone surrogate in a tag key', { ['\udfff']: 'a' }, 'networking.inbound[0].tags["\\udfff"]'],
  ])('refuses %s with 400, not 503', async (_what, tags, field) => {
    const answer = await everywhere(DP, put(taggedDataplane(tags)));
    expect(answer).toMatchObject({ status: 400, body: { code: 'CHANCERY_API_INVALID_RESOURCE', field } });
  });

  it('refuses a NUL in a name in the URL with 400 naming it', async () => {
    const answer = await everywhere('/meshes/default/dataplanes/web%001', put(taggedDataplane({})));
    expect(answer).toMatchObject({ status: 400, body: { code: 'CHANCERY_API_INVALID_NAME', field: 'name' } });
  });

  it.each([
    ['GET', '/meshes/web%00/history', 'mesh'],
    ['GET', '/meshes/default/dataplanes/web%001?revision=1', 'name'],
    ['DELETE', '/meshes/default/dataplanes/web%001', 'name'],
    ['GET', '/meshes/BAD_NAME', 'mesh'],
    ['DELETE', '/api-tokens/BAD_NAME', 'name'],
    ['GET', '/sessions/no-dot', 'node'],
  ])('answers %s %s, a name no resource can have, with 400 naming it and without asking the store', async (method, path, field) => {
    const answer = await everywhere(path, { method });
    expect(answer).toMatchObject({ status: 400, body: { code: 'CHANCERY_API_INVALID_NAME', field } });
  });

  it('refuses a surrogate encoded into the URL (not UTF-8) as a malformed URL', async () => {
    const answer = await everywhere('/meshes/default/dataplanes/%ED%A0%80', put(taggedDataplane({})));
    expect(answer).toMatchObject({ status: 400, body: { code: 'CHANCERY_API_MALFORMED_REQUEST', field: 'url' } });
  });
});

describe('issue 11: URL-level errors answer Chancery’s { code, field, reason }', () => {
  it.each([
    ['/meshes/%ZZ', 400, { code: 'CHANCERY_API_MALFORMED_REQUEST', field: 'url', reason: 'the URL path is not valid percent-encoded UTF-8' }],
    ['/meshes/default/dataplanes/%FF', 400, { code: 'CHANCERY_API_MALFORMED_REQUEST', field: 'url', reason: 'the URL path is not valid percent-encoded UTF-8' }],
    [`/meshes/${'m'.repeat(300)}`, 414, { code: 'CHANCERY_API_URL_TOO_LONG', field: 'url', reason: 'a segment of the URL path is longer than 256 characters; no name is' }],
  ])('answers GET %s with %i and exactly that body', async (path, status, body) => {
    expect(await everywhere(path)).toEqual({ status, body, allow: null });
  });

  it('answers a request once, when its headers end early and bytes that are no request follow', async () => {
    // The blank line ends the headers of a request refused for its URL; what follows is left over.
    const request = 'POST /meshes/%ff HTTP/1.1\r\nHost: t\r\n\r\n\u0000 not a request\r\nConnection: close\r\n\r\n';
    for (const harness of planes.values()) {
      const received = await rawBytes(harness.api, request);
      expect(received.match(/HTTP\/1\.1 \d{3} /g), received).toEqual(['HTTP/1.1 400 ']);
      expect(received).toContain('"reason":"the URL path is not valid percent-encoded UTF-8"');
    }
  });

  it('answers a method the route does not take with 405 and Allow', async () => {
    expect(await everywhere('/meshes/default', { method: 'POST' })).toEqual({
      status: 405,
      body: { code: 'CHANCERY_API_METHOD_NOT_ALLOWED', reason: 'POST is not allowed here; this URL takes DELETE, GET, HEAD, PUT' },
      allow: 'DELETE, GET, HEAD, PUT',
    });
  });

  it('serves a session whose node id is longer than fastify’s default parameter length of 100', async () => {
    const node = `${'m'.repeat(63)}.${'n'.repeat(63)}`;
    expect(await everywhere(`/sessions/${node}`)).toMatchObject({ status: 404, body: { code: 'CHANCERY_API_SESSION_NOT_FOUND' } });
  });
});

describe('issue 11: YAML anchors cannot make a small body a large resource', () => {
  it('refuses a 100 KB body whose aliases expand past the 1 MiB body limit with 413', async () => {
    const yaml = `networking:\n  address: &big "${'x'.repeat(100_000)}"\n  inbound: [${Array.from({ length: 20 }, () => '*big').join(', ')}]\n`;
    expect(yaml.length).toBeLessThan(110_000);
    expect(await everywhere(DP, put(yaml, 'application/yaml'))).toMatchObject({
      status: 413,
      body: { code: 'CHANCERY_API_BODY_TOO_LARGE', reason: 'request body expands (YAML aliases) to more than the limit of 1048576 bytes' },
    });
  });
});

describe('issue 11: deeply nested YAML is refused before the parser recurses', () => {
  it('answers bodies nested thousands deep, one after another, with 400, and keeps serving', async () => {
    // Two of these in a row once crashed the process (a stack overflow inside V8's regexp compiler).
    for (const body of ['['.repeat(5_000) + ']'.repeat(5_000), '- '.repeat(5_000) + 'x', '{a: '.repeat(3_000) + '1' + '}'.repeat(3_000)]) {
      const answer = await everywhere(DP, put(body, 'application/yaml'));
      expect(answer).toMatchObject({ status: 400, body: { code: 'CHANCERY_API_MALFORMED_BODY', reason: 'the YAML body nests deeper than 32 levels' } });
    }
    for (const harness of planes.values()) expect((await rawHttp(harness.api, 'GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n')).status).toBe(200);
  });
});
