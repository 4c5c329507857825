import { describe, expect, it } from 'vitest';
import type { CertificateAuthority, DataplaneTls, Valid } from '../../src/mesh/index.js';
import { applyEvents, checkpointOf, emptyProjection, projectionOf } from '../../src/store/projection.js';
import { dataplane, deleted, mesh, meshKey, upserted } from './fixtures.js';

const authority = (meshName: string, id: string) =>
  ({ type: 'CertificateAuthority', mesh: meshName, name: id, certificate: `certificate of ${id}`, privateKey: `key of ${id}` }) as Valid<CertificateAuthority>;
const status = (meshName: string, name: string, trusts: readonly string[]) =>
  ({ type: 'DataplaneTls', mesh: meshName, name, issuer: trusts[0] ?? '', trusts, inbound: 'strict' }) as unknown as Valid<DataplaneTls>;

const base = applyEvents(emptyProjection(), [upserted(1, mesh('a')), upserted(2, mesh('b')), upserted(3, dataplane('a', 'a-1'))]);

describe('a mesh’s CAs and DataplaneTls statuses in the projection', () => {
  const withTls = applyEvents(base, [upserted(4, authority('a', 'ca-1')), upserted(5, status('a', 'a-1', ['ca-1']))]);

  it('keeps a CA as a credential and in its mesh’s state, and a status in its mesh’s state alone; other meshes keep their objects', () => {
    const a = withTls.meshes.get('a')!;
    expect([...a.authorities.keys()]).toEqual(['ca-1']);
    expect(a.tls.get('a-1')?.resource.trusts).toEqual(['ca-1']);
    expect([...withTls.credentials.values()].map((stored) => stored.resource.type)).toEqual(['CertificateAuthority']);
    expect(a).not.toBe(base.meshes.get('a'));
    expect(withTls.meshes.get('b')).toBe(base.meshes.get('b'));
    // A status change is a new mesh state (the generator reads it), and leaves the credentials as they were.
    const next = applyEvents(withTls, [upserted(6, status('a', 'a-1', ['ca-1', 'ca-2']), 2)]);
    expect(next.credentials).toBe(withTls.credentials);
    expect(next.meshes.get('a')!.tls.get('a-1')?.resource.trusts).toEqual(['ca-1', 'ca-2']);
    expect(next.meshes.get('a')!.dataplanes).toBe(a.dataplanes);
  });

  it('drops a removed CA from both, and everything with its mesh', () => {
    const removed = applyEvents(withTls, [deleted(6, { type: 'CertificateAuthority', mesh: 'a', name: 'ca-1' })]);
    expect(removed.meshes.get('a')!.authorities.size).toBe(0);
    expect(removed.credentials.size).toBe(0);
    const gone = applyEvents(withTls, [deleted(6, { type: 'DataplaneTls', mesh: 'a', name: 'a-1' }), deleted(7, meshKey('a'))]);
    expect(gone.meshes.has('a')).toBe(false);
    expect(gone.credentials.size).toBe(0);
  });

  it('survives a checkpoint', () => {
    const restored = projectionOf(checkpointOf(withTls));
    const a = restored.meshes.get('a')!;
    expect([...a.authorities.values()]).toEqual([...withTls.meshes.get('a')!.authorities.values()]);
    expect([...a.tls.values()]).toEqual([...withTls.meshes.get('a')!.tls.values()]);
    expect([...restored.credentials.entries()]).toEqual([...withTls.credentials.entries()]);
  });
});
