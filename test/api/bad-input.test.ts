import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiHarness, dataplaneBody, startApi } from './api-harness.js';

const BODY_LIMIT = 4096;

interface BadInput {
  readonly what: string;
  readonly path?: string;
  readonly method?: string;
  readonly contentType?: string;
  readonly headers?: Record<string, string>;
  /** Sent as is when a string, as JSON otherwise. */
  readonly body?: unknown;
  readonly status: number;
  readonly code: string;
  readonly field?: string;
}

const DP = '/meshes/default/dataplanes/backend-1';
const valid = dataplaneBody('backend-1');
const withNetworking = (networking: Record<string, unknown>) => ({ ...valid, networking: { ...(valid.networking as object), ...networking } });

const BAD_INPUTS: readonly BadInput[] = [
  {
    what: 'a port out of range',
    body: withNetworking({ inbound: [{ port: 70000, tags: { service: 'backend' } }] }),
    status: 400,
    code: 'CHANCERY_API_INVALID_RESOURCE',
    field: 'networking.inbound[0].port',
  },
  { what: 'a misspelt field', body: withNetworking({ inbounds: [] }), status: 400, code: 'CHANCERY_API_INVALID_RESOURCE', field: 'networking.inbounds' },
  { what: 'a missing required field', body: { type: 'Dataplane' }, status: 400, code: 'CHANCERY_API_INVALID_RESOURCE', field: 'networking' },
  { what: 'a hostname as address', body: withNetworking({ address: 'backend.local' }), status: 400, code: 'CHANCERY_API_INVALID_RESOURCE', field: 'networking.address' },
  { what: 'a name in the path that is not a DNS label', path: '/meshes/default/dataplanes/Backend_1', body: { networking: valid.networking }, status: 400, code: 'CHANCERY_API_INVALID_NAME', field: 'name' },
  { what: 'a mesh in the path that is not a DNS label', path: '/meshes/BAD_NAME/dataplanes/backend-1', body: { networking: valid.networking }, status: 400, code: 'CHANCERY_API_INVALID_NAME', field: 'mesh' },
  { what: 'an array instead of one resource', body: [valid], status: 400, code: 'CHANCERY_API_INVALID_RESOURCE', field: 'body' },
  { what: 'a body naming another dataplane', body: { ...valid, name: 'backend-2' }, status: 400, code: 'CHANCERY_API_PATH_MISMATCH', field: 'name' },
  { what: 'a body naming another mesh', body: { ...valid, mesh: 'other' }, status: 400, code: 'CHANCERY_API_PATH_MISMATCH', field: 'mesh' },
  { what: 'a body of another type', body: { ...valid, type: 'Mesh' }, status: 400, code: 'CHANCERY_API_PATH_MISMATCH', field: 'type' },
  { what: 'a Mesh body with a mesh field', path: '/meshes/default', body: { mesh: 'default' }, status: 400, code: 'CHANCERY_API_INVALID_RESOURCE', field: 'mesh' },
  { what: 'malformed JSON', body: '{"type": "Dataplane",', status: 400, code: 'CHANCERY_API_MALFORMED_BODY', field: 'body' },
  { what: 'malformed YAML', contentType: 'application/yaml', body: 'networking: [a\n  b: {', status: 400, code: 'CHANCERY_API_MALFORMED_BODY', field: 'body' },
  { what: 'several YAML documents', contentType: 'application/yaml', body: 'type: Dataplane\n---\ntype: Dataplane\n', status: 400, code: 'CHANCERY_API_MALFORMED_BODY', field: 'body' },
  { what: 'an empty body', body: '', status: 400, code: 'CHANCERY_API_MALFORMED_BODY', field: 'body' },
  { what: 'no body at all', contentType: '', status: 400, code: 'CHANCERY_API_MALFORMED_BODY', field: 'body' },
  // JSON.parse keeps the last of a key given twice: the second networking would drop the inbounds.
  { what: 'a JSON key given twice', body: `{"networking": ${JSON.stringify(valid.networking)}, "networking": {"address": "127.0.0.1"}}`, status: 400, code: 'CHANCERY_API_MALFORMED_BODY', field: 'networking' },
  {
    what: 'a JSON key given twice deep inside',
    body: '{"networking": {"address": "127.0.0.1", "inbound": [{"port": 10001, "tags": {"service": "backend"}, "port": 10002}]}}',
    status: 400,
    code: 'CHANCERY_API_MALFORMED_BODY',
    field: 'networking.inbound[0].port',
  },
  { what: 'a JSON key given twice, once escaped', body: '{"networking": {"address": "127.0.0.1", "addr\\u0065ss": "::1"}}', status: 400, code: 'CHANCERY_API_MALFORMED_BODY', field: 'networking.address' },
  { what: 'a YAML key given twice', contentType: 'application/yaml', body: 'networking:\n  address: 127.0.0.1\nnetworking:\n  address: ::1\n', status: 400, code: 'CHANCERY_API_MALFORMED_BODY', field: 'networking' },
  {
    what: 'YAML keys that differ as YAML but not as JSON (1 and "1")',
    contentType: 'application/yaml',
    body: 'networking:\n  address: 127.0.0.1\n  inbound:\n    - port: 10001\n      tags: {service: backend, 1: a, "1": b}\n',
    status: 400,
    code: 'CHANCERY_API_MALFORMED_BODY',
    field: 'networking.inbound[0].tags["1"]',
  },
  { what: 'a body over the limit', body: { ...valid, padding: 'x'.repeat(BODY_LIMIT) }, status: 413, code: 'CHANCERY_API_BODY_TOO_LARGE', field: 'body' },
  { what: 'an unsupported Content-Type', contentType: 'text/plain', body: 'hello', status: 415, code: 'CHANCERY_API_UNSUPPORTED_MEDIA_TYPE', field: 'Content-Type' },
  { what: 'an If-Match that is not a version', headers: { 'if-match': 'W/"abc"' }, body: valid, status: 400, code: 'CHANCERY_API_INVALID_PRECONDITION', field: 'If-Match' },
  // RFC 9110 §8.8.3 and docs/http-api.md: an entity tag is quoted, as the ETag answers it.
  { what: 'an If-Match version without quotes', headers: { 'if-match': '1' }, body: valid, status: 400, code: 'CHANCERY_API_INVALID_PRECONDITION', field: 'If-Match' },
  { what: 'an If-Match version quoted on one side only', headers: { 'if-match': '"1' }, body: valid, status: 400, code: 'CHANCERY_API_INVALID_PRECONDITION', field: 'If-Match' },
  { what: 'an If-None-Match other than *', headers: { 'if-none-match': '"1"' }, body: valid, status: 400, code: 'CHANCERY_API_INVALID_PRECONDITION', field: 'If-None-Match' },
  { what: 'a body version that is not a number', body: { ...valid, version: 'latest' }, status: 400, code: 'CHANCERY_API_INVALID_PRECONDITION', field: 'version' },
  { what: 'a body version disagreeing with If-Match', headers: { 'if-match': '"1"' }, body: { ...valid, version: 2 }, status: 400, code: 'CHANCERY_API_INVALID_PRECONDITION', field: 'version' },
  { what: 'a stale If-Match', headers: { 'if-match': '"9"' }, body: valid, status: 409, code: 'CHANCERY_STORE_VERSION_CONFLICT' },
  { what: 'If-None-Match: * for a dataplane that exists', headers: { 'if-none-match': '*' }, body: valid, status: 409, code: 'CHANCERY_STORE_VERSION_CONFLICT' },
  { what: 'a dataplane in a mesh that does not exist', path: '/meshes/nowhere/dataplanes/backend-1', body: { networking: valid.networking }, status: 404, code: 'CHANCERY_STORE_MESH_NOT_FOUND', field: 'mesh' },
  { what: 'deleting a dataplane that does not exist', method: 'DELETE', path: '/meshes/default/dataplanes/backend-9', status: 404, code: 'CHANCERY_STORE_NOT_FOUND', field: 'name' },
  { what: 'a query parameter the PUT does not take (dryRun misspelt)', path: `${DP}?dryrun=true`, body: { ...valid, networking: { address: '::1' } }, status: 400, code: 'CHANCERY_API_INVALID_QUERY', field: 'dryrun' },
  { what: 'a dryRun that is not true or false', path: `${DP}?dryRun=yes`, body: { ...valid, networking: { address: '::1' } }, status: 400, code: 'CHANCERY_API_INVALID_QUERY', field: 'dryRun' },
  { what: 'a query parameter the DELETE does not take', method: 'DELETE', path: `${DP}?x=1`, status: 400, code: 'CHANCERY_API_INVALID_QUERY', field: 'x' },
  // Ignored, a version in it would delete unconditionally: a PUT's body version is a precondition.
  { what: 'a DELETE with a body', method: 'DELETE', body: { version: 7 }, status: 400, code: 'CHANCERY_API_MALFORMED_BODY', field: 'body' },
  { what: 'deleting a name no dataplane can have', method: 'DELETE', path: '/meshes/default/dataplanes/BAD_NAME', status: 400, code: 'CHANCERY_API_INVALID_NAME', field: 'name' },
  { what: 'an unknown route', method: 'POST', path: '/dataplanes', body: valid, status: 404, code: 'CHANCERY_API_ROUTE_NOT_FOUND' },
];

let api: ApiHarness;
beforeAll(async () => {
  api = await startApi({ bodyLimit: BODY_LIMIT });
  const created = await fetch(`${api.url}${DP}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(valid) });
  expect(created.status).toBe(201);
});
afterAll(async () => {
  await api.close();
});

describe('every kind of bad input is refused with its status and field, and nothing is stored', () => {
  it.each(BAD_INPUTS)('refuses $what with $status $code', async (input) => {
    const before = api.contents();
    const headers: Record<string, string> = { ...input.headers };
    const contentType = input.contentType ?? 'application/json';
    if (contentType !== '') headers['content-type'] = contentType;
    const body = input.body === undefined || typeof input.body === 'string' ? input.body : JSON.stringify(input.body);

    const response = await fetch(`${api.url}${input.path ?? DP}`, { method: input.method ?? 'PUT', headers, body: body as string | undefined });

    expect(response.status).toBe(input.status);
    const answer = (await response.json()) as Record<string, unknown>;
    expect(answer.code).toBe(input.code);
    expect(answer.field).toBe(input.field);
    expect(answer.reason).toEqual(expect.any(String));
    expect(api.contents()).toEqual(before);
  });

  it('names the field in every 400 it answers', () => {
    for (const input of BAD_INPUTS.filter(({ status }) => status === 400)) expect(input.field, input.what).toEqual(expect.any(String));
  });

  it('lists every validation issue, the first one as the field', async () => {
    const response = await fetch(`${api.url}${DP}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(withNetworking({ address: 'nope', inbound: [{ port: 0, tags: { service: 'backend' } }] })),
    });
    const answer = (await response.json()) as { field: string; reason: string; issues: unknown[] };
    expect(answer.issues).toEqual([
      { path: 'networking.address', reason: 'must be an IPv4 or IPv6 address' },
      { path: 'networking.inbound[0].port', reason: 'must be an integer from 1 to 65535' },
    ]);
    expect(answer.field).toBe('networking.address');
    expect(answer.reason).toBe('networking.address: must be an IPv4 or IPv6 address');
  });

  it('names the problem in malformed JSON and states the limit for an oversized body', async () => {
    const malformed = await fetch(`${api.url}${DP}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"type": ' });
    expect(((await malformed.json()) as { reason: string }).reason).toMatch(/^invalid JSON: /);
    const large = await fetch(`${api.url}${DP}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ padding: 'x'.repeat(BODY_LIMIT) }),
    });
    expect(((await large.json()) as { reason: string }).reason).toBe(`request body is larger than the limit of ${BODY_LIMIT} bytes`);
  });
});
