import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { issueApiToken } from '../../src/identity/index.js';
import { type ApiHarness, startApi } from './api-harness.js';
import { backendDataplane, startHarness } from '../support/harness.js';

/**
 * `POST /apply` (issue 28): several resources in one request, all written at one revision or
 * none; every refused one listed with its own code, field and reason.
 */

let api: ApiHarness;
beforeEach(async () => {
  api = await startApi();
});
afterEach(async () => {
  await api.close();
});

async function post(body: unknown, path = '/apply', headers: Record<string, string> = {}) {
  const response = await fetch(`${api.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const dataplane = (name: string, port = 10001, mesh = 'default') => ({ ...backendDataplane(name, port, 'web', mesh) });

describe('POST /apply', () => {
  it('writes every resource at one revision and answers each outcome in the order sent, Meshes written first', async () => {
    await post({ items: [dataplane('web-1')] });
    const { status, body } = await post({ items: [dataplane('web-1', 10002), dataplane('web-2', 10001, 'shop'), { type: 'Mesh', name: 'shop' }] });
    expect(status).toBe(200);
    expect(body['items']).toEqual([
      { type: 'Dataplane', mesh: 'default', name: 'web-1', outcome: 'configured', version: 2 },
      { type: 'Dataplane', mesh: 'shop', name: 'web-2', outcome: 'created', version: 1 },
      { type: 'Mesh', mesh: 'shop', name: 'shop', outcome: 'created', version: 1 },
    ]);
    expect(body['revision']).toBe(api.store.projection.revision);
    const seqs = ['web-1', 'web-2'].map((name) => api.store.list('Dataplane').find((stored) => stored.resource.name === name)!.seq);
    expect(Math.max(...seqs)).toBe(body['revision']);
  });

  it('writes nothing when one resource is refused, and lists every refused one with its position, code, status, field and reason', async () => {
    const before = api.contents();
    const { status, body } = await post({
      items: [dataplane('web-1'), dataplane('web-2', 70000), { ...dataplane('web-3'), mesh: 'nowhere' }, { ...dataplane('web-4'), version: 3 }, 'text', dataplane('web-1')],
    });
    expect(status).toBe(400);
    expect(body['code']).toBe('CHANCERY_API_APPLY_REFUSED');
    expect(body['reason']).toMatch(/^5 of 6 resources refused, nothing applied/);
    expect(body['items']).toEqual([
      expect.objectContaining({ index: 1, name: 'web-2', status: 400, code: 'CHANCERY_API_INVALID_RESOURCE', field: 'items[1].networking.inbound[0].port' }),
      expect.objectContaining({ index: 2, mesh: 'nowhere', status: 404, code: 'CHANCERY_STORE_MESH_NOT_FOUND', field: 'items[2].mesh' }),
      expect.objectContaining({ index: 3, status: 409, code: 'CHANCERY_STORE_VERSION_CONFLICT' }),
      expect.objectContaining({ index: 4, status: 400, code: 'CHANCERY_API_INVALID_RESOURCE', field: 'items[4]', reason: 'must be one resource (an object with type, name, …)' }),
      expect.objectContaining({ index: 5, status: 400, field: 'items[5].name', reason: 'name: Dataplane default/web-1 is already items[0]: a resource appears once in an apply' }),
    ]);
    expect(api.contents()).toEqual(before);
  });

  it.each([
    ['no items', {}, /items must be a list of one or more resources/],
    ['an empty list', { items: [] }, /items must be a list of one or more resources/],
    ['a field besides items', { items: [dataplane('web-1')], dryRun: true }, /unknown field "dryRun"/],
    ['a list, not an object', [dataplane('web-1')], /the body must be an object/],
    ['more than 10,000 resources', { items: Array.from({ length: 10_001 }, () => ({})) }, /items holds 10001 resources; one apply takes at most 10000/],
  ])('refuses a body with %s, writing nothing', async (_what, body, reason) => {
    const before = api.contents();
    const answer = await post(body);
    expect(answer.status).toBe(400);
    expect(answer.body['code']).toBe('CHANCERY_API_MALFORMED_BODY');
    expect(answer.body['reason']).toMatch(reason);
    expect(api.contents()).toEqual(before);
  });

  it('takes a body over the default 1 MiB limit: 5,000 Dataplanes in one request', async () => {
    const items = Array.from({ length: 5_000 }, (_, index) => ({ ...dataplane(`web-${index}`), networking: { address: '10.0.0.1', inbound: [{ port: 10001, tags: { service: 'web', version: 'v1', zone: 'zone-a' } }], outbound: [{ port: 20001, service: 'backend' }] } }));
    expect(JSON.stringify({ items }).length).toBeGreaterThan(1024 * 1024);
    const { status, body } = await post({ items });
    expect(status).toBe(200);
    expect(body['items']).toHaveLength(5_000);
    expect(api.store.list('Dataplane')).toHaveLength(5_000);
  });

  it('refuses an unknown query parameter, so a parameter an older server does not know never writes', async () => {
    const answer = await post({ items: [dataplane('web-1')] }, '/apply?dryrun=true');
    expect(answer.status).toBe(400);
    expect(answer.body['code']).toBe('CHANCERY_API_INVALID_QUERY');
    expect(api.store.list('Dataplane')).toEqual([]);
  });
});

describe('POST /apply with API tokens', () => {
  it('lets a writer apply to its meshes only: one resource outside them refuses the call, 403, and nothing is written', async () => {
    const harness = await startHarness({ apiAuth: 'token' });
    try {
      const writer = (await issueApiToken(harness.cp.store, { name: 'ci', role: 'writer', meshes: ['default'], now: Date.now() })).token;
      const reader = (await issueApiToken(harness.cp.store, { name: 'dash', role: 'reader', now: Date.now() })).token;
      await harness.cp.apply({ type: 'Mesh', name: 'shop' });
      const send = (token: string, items: unknown[]) =>
        fetch(`http://${harness.api}/apply`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ items }) });
      const outside = await send(writer, [dataplane('web-1'), dataplane('web-2', 10001, 'shop')]);
      expect(outside.status).toBe(403);
      expect(harness.cp.list('Dataplane')).toEqual([]);
      expect((await send(reader, [dataplane('web-1')])).status).toBe(403);
      const inside = await send(writer, [dataplane('web-1')]);
      expect(inside.status).toBe(200);
      expect(harness.cp.list('Dataplane').map((stored) => stored.resource.name)).toEqual(['web-1']);
    } finally {
      await harness.stop();
    }
  });
});
