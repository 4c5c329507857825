import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/api/index.js';
import { type ApiHarness, startApi } from '../api/api-harness.js';
import { rawHttp } from '../support/raw-http.js';

const root = path.resolve(import.meta.dirname, '../..');

/** Every `readonly code = 'CHANCERY_…'` declared under src/, with where. */
function declaredCodes(): Array<{ code: string; file: string }> {
  const files = readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
  return files.flatMap((file) =>
    [...readFileSync(path.join(root, 'src', file), 'utf8').matchAll(/readonly code = '(CHANCERY_[A-Z_]+)'/g)].map((match) => ({
      code: match[1]!,
      file,
    })),
  );
}

const documented = [...readFileSync(path.join(root, 'docs/errors.md'), 'utf8').matchAll(/^\| `(CHANCERY_[A-Z_]+)` \| ([^|]+) \|/gm)].map(
  (match) => ({ code: match[1]!, surfaces: match[2]!.trim() }),
);

describe('the error catalogue (docs/errors.md)', () => {
  it('never uses one code twice', () => {
    const codes = declaredCodes().map(({ code }) => code);
    expect(codes.length).toBeGreaterThan(20);
    expect(codes.filter((code, i) => codes.indexOf(code) !== i)).toEqual([]);
  });

  it('documents every code, with where it surfaces, and nothing that no longer exists', () => {
    const declared = new Set(declaredCodes().map(({ code }) => code));
    expect([...declared].filter((code) => !documented.some((row) => row.code === code))).toEqual([]);
    expect(documented.filter((row) => !declared.has(row.code)).map((row) => row.code)).toEqual([]);
    for (const row of documented) expect(row.surfaces, row.code).not.toBe('');
  });

  it('gives every code the HTTP API answers with the status the catalogue says', () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      const row = documented.find((entry) => entry.code === code);
      expect(row?.surfaces, code).toContain(`HTTP ${status}`);
    }
  });
});

/**
 * Requests the router refuses before any handler runs, each sent as raw bytes: fastify and
 * Node answer these with bodies of their own unless told otherwise (issue 11).
 */
const ROUTER_REFUSALS: ReadonlyArray<{
  readonly what: string;
  readonly line: string;
  readonly headers?: readonly string[];
  readonly body?: string;
  readonly host?: false;
}> = [
  { what: 'an undecodable %ZZ in the path', line: 'GET /meshes/%ZZ' },
  { what: 'a %FF that is no UTF-8', line: 'GET /meshes/default/dataplanes/%FF' },
  { what: 'an over-long path parameter', line: `GET /sessions/${'n'.repeat(300)}` },
  { what: 'an unknown route', line: 'GET /dataplanes' },
  { what: 'a method the route does not take', line: 'POST /meshes/default', headers: ['Content-Length: 0'] },
  { what: 'an unsupported media type', line: 'PUT /meshes/default', headers: ['Content-Type: text/csv', 'Content-Length: 3'], body: 'a,b' },
  { what: 'a request line that is not HTTP', line: 'GET /\u0000 NOT-HTTP' },
  { what: 'headers over 16 KiB', line: 'GET /healthz', headers: [`X-Padding: ${'p'.repeat(20_000)}`] },
  { what: 'a bad Content-Length', line: 'PUT /meshes/default', headers: ['Content-Length: x'] },
  { what: 'an HTTP/1.1 request without Host (Node answers it with no body)', line: 'GET /meshes', host: false },
];

describe('router-level refusals (issue 11)', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(() => api.close());

  it.each(ROUTER_REFUSALS)('answers $what with { code, field?, reason }, a code the catalogue lists with that status', async ({ line, headers = [], body = '', host }) => {
    const head = [`${line} HTTP/1.1`, ...(host === false ? [] : ['Host: test']), 'Connection: close', ...headers].join('\r\n');
    const response = await rawHttp(api.address, `${head}\r\n\r\n${body}`);
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const answer = JSON.parse(response.body) as Record<string, unknown>;
    expect(Object.keys(answer).filter((key) => !['code', 'field', 'reason'].includes(key))).toEqual([]);
    expect(answer.reason).toEqual(expect.any(String));
    const row = documented.find((entry) => entry.code === answer.code);
    expect(row?.surfaces, String(answer.code)).toContain(`HTTP ${response.status}`);
    expect(ERROR_STATUS[answer.code as keyof typeof ERROR_STATUS]).toBe(response.status);
  });
});
