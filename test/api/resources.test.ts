import { describe, expect, it } from 'vitest';
import { asSeq } from '../../src/store/index.js';
import { apiFor, dataplaneBody, putJson } from './api-harness.js';

const api = apiFor();

describe('meshes', () => {
  it('lists the default mesh of a fresh store', async () => {
    const response = await fetch(`${api.url}/meshes`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ items: [{ type: 'Mesh', name: 'default', dataplaneAuth: 'none', version: 1 }] });
  });

  it('creates a mesh with 201, reads it back with its ETag, and replaces it with 200', async () => {
    const created = await putJson(`${api.url}/meshes/payments`, { type: 'Mesh', name: 'payments' });
    expect(created.status).toBe(201);
    expect(created.headers.get('etag')).toBe('"1"');
    expect(await created.json()).toEqual({ type: 'Mesh', name: 'payments', dataplaneAuth: 'token', version: 1 });

    const read = await fetch(`${api.url}/meshes/payments`);
    expect(read.status).toBe(200);
    expect(read.headers.get('etag')).toBe('"1"');
    expect(await read.json()).toEqual({ type: 'Mesh', name: 'payments', dataplaneAuth: 'token', version: 1 });

    const replaced = await putJson(`${api.url}/meshes/payments`, { dataplaneAuth: 'none' });
    expect(replaced.status).toBe(200);
    expect(replaced.headers.get('etag')).toBe('"2"');
    expect(replaced.headers.get('chancery-outcome')).toBe('configured');
  });

  it('answers a write identical to what is stored as unchanged, with the same version, and appends no event', async () => {
    const created = await putJson(`${api.url}/meshes/payments`, { dataplaneAuth: 'none' });
    expect(created.headers.get('chancery-outcome')).toBe('created');
    const revision = created.headers.get('chancery-revision');
    expect(Number(revision)).toBe(api.store.projection.revision);
    const again = await putJson(`${api.url}/meshes/payments`, { type: 'Mesh', dataplaneAuth: 'none', version: 1 });
    expect(again.status).toBe(200);
    expect(again.headers.get('etag')).toBe('"1"');
    expect(again.headers.get('chancery-outcome')).toBe('unchanged');
    expect(again.headers.get('chancery-revision')).toBe(revision);
    expect(await again.json()).toEqual({ type: 'Mesh', name: 'payments', dataplaneAuth: 'none', version: 1 });
    expect(await api.store.readEvents(asSeq(Number(revision)), 10)).toEqual([]);
  });

  it('answers a delete with its outcome and the revision it made', async () => {
    await putJson(`${api.url}/meshes/payments`, {});
    const deleted = await fetch(`${api.url}/meshes/payments`, { method: 'DELETE' });
    expect(deleted.headers.get('chancery-outcome')).toBe('deleted');
    expect(Number(deleted.headers.get('chancery-revision'))).toBe(api.store.projection.revision);
  });

  it('deletes a mesh together with its dataplanes', async () => {
    await putJson(`${api.url}/meshes/payments`, {});
    await putJson(`${api.url}/meshes/payments/dataplanes/ledger-1`, { ...dataplaneBody('ledger-1'), mesh: 'payments' });
    expect(api.store.list('Dataplane', 'payments')).toHaveLength(1);

    const deleted = await fetch(`${api.url}/meshes/payments`, { method: 'DELETE' });
    expect(deleted.status).toBe(204);
    expect((await fetch(`${api.url}/meshes/payments`)).status).toBe(404);
    expect(api.store.list('Dataplane')).toEqual([]);
  });

  it('answers 404 for a mesh that does not exist', async () => {
    const response = await fetch(`${api.url}/meshes/nowhere`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'CHANCERY_STORE_NOT_FOUND', reason: 'Mesh nowhere does not exist' });
  });
});

describe('dataplanes', () => {
  it('round-trips a dataplane through PUT, GET, list and DELETE', async () => {
    const created = await putJson(`${api.url}/meshes/default/dataplanes/backend-1`, dataplaneBody('backend-1'));
    expect(created.status).toBe(201);
    const body = await created.json();
    expect(body).toMatchObject({ ...dataplaneBody('backend-1'), version: 1 });

    const read = await fetch(`${api.url}/meshes/default/dataplanes/backend-1`);
    expect(await read.json()).toEqual(body);

    const list = await fetch(`${api.url}/meshes/default/dataplanes`);
    expect(await list.json()).toEqual({ items: [body] });

    const deleted = await fetch(`${api.url}/meshes/default/dataplanes/backend-1`, { method: 'DELETE' });
    expect(deleted.status).toBe(204);
    const gone = await fetch(`${api.url}/meshes/default/dataplanes/backend-1`);
    expect(gone.status).toBe(404);
    expect(await gone.json()).toMatchObject({ code: 'CHANCERY_STORE_NOT_FOUND' });
  });

  it('fills type, mesh and name from the path when the body leaves them out', async () => {
    const { networking } = dataplaneBody('backend-1');
    const created = await putJson(`${api.url}/meshes/default/dataplanes/backend-1`, { networking });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ type: 'Dataplane', mesh: 'default', name: 'backend-1' });
  });

  it('stores the normalised resource that validation returns', async () => {
    const created = await putJson(`${api.url}/meshes/default/dataplanes/backend-1`, {
      networking: { address: '127.0.0.1', inbound: [{ port: 10001, tags: { service: 'backend' } }] },
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({
      networking: { inbound: [{ port: 10001, servicePort: 10001 }], outbound: [] },
    });
  });

  it('accepts a YAML body', async () => {
    const yaml = [
      'type: Dataplane',
      'networking:',
      '  address: 10.0.0.7',
      '  inbound:',
      '    - port: 10001',
      '      tags: { service: backend }',
    ].join('\n');
    for (const contentType of ['application/yaml', 'text/yaml; charset=utf-8']) {
      const response = await fetch(`${api.url}/meshes/default/dataplanes/backend-1`, {
        method: 'PUT',
        headers: { 'content-type': contentType },
        body: yaml,
      });
      expect(response.status).toBeLessThan(300);
    }
    expect(api.store.get({ type: 'Dataplane', mesh: 'default', name: 'backend-1' })?.resource).toMatchObject({
      networking: { address: '10.0.0.7' },
    });
  });

  it('answers 404 naming the mesh when listing the dataplanes of a mesh that does not exist', async () => {
    const response = await fetch(`${api.url}/meshes/nowhere/dataplanes`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ reason: 'Mesh nowhere does not exist' });
  });
});

describe('optimistic concurrency', () => {
  const url = () => `${api.url}/meshes/default/dataplanes/backend-1`;

  it('writes when If-Match names the current version as the ETag gives it, and refuses the version without its quotes', async () => {
    const created = await putJson(url(), dataplaneBody('backend-1'));
    const etag = created.headers.get('etag')!;
    expect((await putJson(url(), dataplaneBody('backend-1', 10002), { 'if-match': etag })).status).toBe(200);
    const before = api.contents();
    const bare = await putJson(url(), dataplaneBody('backend-1', 10003), { 'if-match': '2' });
    expect(bare.status).toBe(400);
    expect(await bare.json()).toMatchObject({ code: 'CHANCERY_API_INVALID_PRECONDITION', field: 'If-Match' });
    expect(api.contents()).toEqual(before);
  });

  it('answers 409 to a stale If-Match and leaves the store unchanged', async () => {
    await putJson(url(), dataplaneBody('backend-1'));
    await putJson(url(), dataplaneBody('backend-1', 10002));
    const before = api.contents();

    const response = await putJson(url(), dataplaneBody('backend-1', 10003), { 'if-match': '"1"' });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: 'CHANCERY_STORE_VERSION_CONFLICT' });
    expect(api.contents()).toEqual(before);
  });

  it("treats the body's version, as `get -o yaml` prints it, like If-Match", async () => {
    await putJson(url(), dataplaneBody('backend-1'));
    await putJson(url(), dataplaneBody('backend-1', 10002));
    const before = api.contents();

    const stale = await putJson(url(), { ...dataplaneBody('backend-1', 10003), version: 1 });
    expect(stale.status).toBe(409);
    expect(api.contents()).toEqual(before);
    expect((await putJson(url(), { ...dataplaneBody('backend-1', 10003), version: 2 })).status).toBe(200);
  });

  it('creates with If-None-Match: * only when the resource does not exist', async () => {
    expect((await putJson(url(), dataplaneBody('backend-1'), { 'if-none-match': '*' })).status).toBe(201);
    const before = api.contents();
    const again = await putJson(url(), dataplaneBody('backend-1', 10002), { 'if-none-match': '*' });
    expect(again.status).toBe(409);
    expect(api.contents()).toEqual(before);
  });

  it('deletes only the version If-Match names', async () => {
    await putJson(url(), dataplaneBody('backend-1'));
    const stale = await fetch(url(), { method: 'DELETE', headers: { 'if-match': '"7"' } });
    expect(stale.status).toBe(409);
    expect(api.store.list('Dataplane')).toHaveLength(1);
    expect((await fetch(url(), { method: 'DELETE', headers: { 'if-match': '"1"' } })).status).toBe(204);
  });
});
