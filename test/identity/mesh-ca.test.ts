import { X509Certificate } from 'node:crypto';
import { filter, firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Projection } from '../../src/store/index.js';
import { runCli } from '../cli/cli-harness.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
let base: string;
beforeAll(async () => {
  harness = await startHarness();
  base = `http://${harness.api}`;
});
afterAll(() => harness.stop());

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, {
    method,
    ...(body !== undefined && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** Resolves once the store holds a projection where `predicate` holds: the CA keeper writes asynchronously. */
function projectionWhere(predicate: (projection: Projection) => boolean): Promise<Projection> {
  return firstValueFrom(harness.cp.store.projections.pipe(filter(predicate)));
}

const authoritiesOf = (mesh: string) => (projection: Projection) => projection.meshes.get(mesh)?.authorities.size ?? 0;

describe('a Mesh’s mtls', () => {
  it.each([
    [{ mode: 'mutual' }, 'mtls.mode', /must be one of "disabled", "permissive", "strict"/],
    [{ mode: 'strict', certificateTTL: '10s' }, 'mtls.certificateTTL', /from 30s to 90d/],
    [{ mode: 'strict', certificateTTL: '91d' }, 'mtls.certificateTTL', /from 30s to 90d/],
    [{ mode: 'strict', certificateTTL: 3600 }, 'mtls.certificateTTL', /a duration such as 30s/],
    [{ mode: 'strict', rotation: '1h' }, 'mtls.rotation', /unknown field; mtls has mode, certificateTTL/],
    ['strict', 'mtls', /must be an object/],
  ])('refuses mtls %j with 400 naming %s, storing nothing', async (mtls, field, reason) => {
    const revision = harness.cp.store.projection.revision;
    const answer = await call('PUT', '/meshes/bad', { type: 'Mesh', name: 'bad', dataplaneAuth: 'none', mtls });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'CHANCERY_API_INVALID_RESOURCE', field });
    expect(answer.body.issues.find((issue: { path: string }) => issue.path === field).reason).toMatch(reason);
    expect(harness.cp.store.projection.revision).toBe(revision);
  });

  it('is disabled and needs no CA when left out, and gets its first CA, ECDSA P-256 for ten years, when enabled', async () => {
    expect((await call('PUT', '/meshes/plain', { type: 'Mesh', name: 'plain', dataplaneAuth: 'none' })).status).toBe(201);
    expect((await call('GET', '/meshes/plain')).body).not.toHaveProperty('mtls');
    const answer = await call('PUT', '/meshes/secure', { type: 'Mesh', name: 'secure', dataplaneAuth: 'none', mtls: { mode: 'permissive' } });
    expect(answer.status).toBe(201);
    expect(answer.body.mtls).toEqual({ mode: 'permissive', certificateTTL: '24h' });
    await projectionWhere((projection) => authoritiesOf('secure')(projection) === 1);
    expect(authoritiesOf('plain')(harness.cp.store.projection)).toBe(0);
    const { body } = await call('GET', '/meshes/secure/ca');
    expect(body.items).toEqual([expect.objectContaining({ id: 'ca-1', signing: true, certificates: 0, awaiting: [] })]);
    const ca = new X509Certificate(body.items[0].certificate);
    expect(ca.ca).toBe(true);
    expect(ca.publicKey.asymmetricKeyDetails).toMatchObject({ namedCurve: 'prime256v1' });
    expect(body.items[0].notAfter).toBe(new Date(ca.validTo).toISOString());
    expect(body.trustBundle).toBe(`${body.items[0].certificate}\n`);
  });

  it('never shows a CA’s private key: not in the list, the rotation’s answer, nor /events', async () => {
    const rotated = await call('POST', '/meshes/secure/ca');
    const listed = await call('GET', '/meshes/secure/ca');
    const events = await call('GET', '/events?limit=1000');
    const caEvents = events.body.items.filter((event: { type: string }) => event.type === 'CertificateAuthority');
    expect(caEvents.length).toBeGreaterThanOrEqual(2);
    for (const text of [rotated, listed, events].map((answer) => JSON.stringify(answer.body))) {
      expect(text).not.toMatch(/PRIVATE KEY|privateKey/);
    }
    // The store itself keeps it: every instance sharing the store signs with the same CA.
    const stored = harness.cp.store.list('CertificateAuthority', 'secure');
    expect(stored.map((ca) => ca.resource.privateKey)).toEqual([expect.stringContaining('PRIVATE KEY'), expect.stringContaining('PRIVATE KEY')]);
  });
});

describe('CA rotation and removal', () => {
  it('adds a CA that joins the trust bundle, signs once every dataplane trusts it, and removes the old one', async () => {
    await call('PUT', '/meshes/rot', { type: 'Mesh', name: 'rot', dataplaneAuth: 'none', mtls: { mode: 'strict', certificateTTL: '30s' } });
    await projectionWhere((projection) => authoritiesOf('rot')(projection) === 1);
    await harness.cp.apply(backendDataplane('backend-1', 10_001, 'backend', 'rot'));
    // backend-1 has ACKed the bundle of ca-1 alone and holds a certificate ca-1 signed.
    await harness.cp.store.put({ type: 'DataplaneTls', mesh: 'rot', name: 'backend-1', issuer: 'ca-1', trusts: ['ca-1'], inbound: 'strict' } as never);

    const added = await call('POST', '/meshes/rot/ca');
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ id: 'ca-2', signing: false, awaiting: ['backend-1'] });
    let listed = (await call('GET', '/meshes/rot/ca')).body;
    expect(listed.items.map((ca: { id: string; signing: boolean }) => [ca.id, ca.signing])).toEqual([
      ['ca-1', true],
      ['ca-2', false],
    ]);
    expect(listed.trustBundle).toBe(`${listed.items[0].certificate}\n${listed.items[1].certificate}\n`);
    const refused = await call('DELETE', '/meshes/rot/ca/ca-1');
    expect(refused).toMatchObject({ status: 409, body: { code: 'CHANCERY_IDENTITY_CA_IN_USE', field: 'id', reason: expect.stringMatching(/it signs the mesh’s certificates/) } });

    // The dataplane ACKs the bundle holding both: ca-2 signs from then on.
    await harness.cp.store.put({ type: 'DataplaneTls', mesh: 'rot', name: 'backend-1', issuer: 'ca-1', trusts: ['ca-1', 'ca-2'], inbound: 'strict' } as never);
    listed = (await call('GET', '/meshes/rot/ca')).body;
    expect(listed.items.map((ca: { id: string; signing: boolean }) => [ca.id, ca.signing])).toEqual([
      ['ca-1', false],
      ['ca-2', true],
    ]);
    // backend-1 is not connected to any instance: its certificate from ca-1 is nobody's to verify.
    expect((await call('DELETE', '/meshes/rot/ca/ca-1')).status).toBe(204);
    expect((await call('GET', '/meshes/rot/ca')).body.items.map((ca: { id: string }) => ca.id)).toEqual(['ca-2']);
    expect((await call('DELETE', '/meshes/rot/ca/ca-2')).status).toBe(409);
    expect((await call('DELETE', '/meshes/rot/ca/ca-9')).body).toMatchObject({ code: 'CHANCERY_STORE_NOT_FOUND' });
    expect((await call('GET', '/meshes/nowhere/ca')).status).toBe(404);
  });
});

describe('chancery ca rotate|list|remove --mesh', () => {
  const cli = (argv: readonly string[]) => runCli(argv, { env: { CHANCERY_API_ADDRESS: harness.api } });

  it('rotates, lists and removes a mesh’s CAs through the API, beside ca init and issue', async () => {
    await call('PUT', '/meshes/cli', { type: 'Mesh', name: 'cli', dataplaneAuth: 'none', mtls: { mode: 'permissive' } });
    await projectionWhere((projection) => authoritiesOf('cli')(projection) === 1);
    const rotated = await cli(['ca', 'rotate', '--mesh', 'cli']);
    expect(rotated).toMatchObject({ code: 0, stdout: expect.stringMatching(/^CA ca-2 added to mesh cli: every dataplane trusts it, and it signs now/) });
    const listed = await cli(['ca', 'list', '--mesh', 'cli']);
    expect(listed.stdout).toMatch(/^ID\s+CREATED\s+NOT AFTER\s+SIGNS\s+CERTIFICATES\s+NOT TRUSTED BY\nca-1 .*\n ?ca-2 .*yes\s+0\n$/m);
    const json = JSON.parse((await cli(['ca', 'list', '--mesh', 'cli', '-o', 'json'])).stdout);
    expect(json.trustBundle).toMatch(/^(-----BEGIN CERTIFICATE-----\n[^-]+-----END CERTIFICATE-----\n){2}$/);
    expect(await cli(['ca', 'remove', '--mesh', 'cli', 'ca-1'])).toMatchObject({ code: 0, stdout: 'CA ca-1 removed from mesh cli: no dataplane trusts it any more\n' });
    const refused = await cli(['ca', 'remove', '--mesh', 'cli', 'ca-2']);
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/CHANCERY_IDENTITY_CA_IN_USE \(HTTP 409\)/) });
  });

  it.each([
    [['ca', 'rotate'], /--mesh MESH is required for ca rotate/],
    [['ca', 'remove', '--mesh', 'cli'], /say which CA: chancery ca remove --mesh MESH ID/],
    [['ca', 'rotate', '--mesh', 'cli', '--out', 'dir'], /--out applies to ca init and issue, not ca rotate/],
    [['ca', 'init', '--out', 'dir', '--mesh', 'cli'], /--mesh applies to ca rotate, list and remove, not ca init/],
    [['ca', 'rotate', '--mesh', 'cli', '-o', 'json'], /-o json applies to ca list/],
  ])('refuses %j with a usage error', async (argv, message) => {
    const { code, stderr } = await cli(argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });
});
