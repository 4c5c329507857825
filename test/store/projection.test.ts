import { describe, expect, it } from 'vitest';
import { applyEvents, checkpointOf, emptyProjection, projectionOf } from '../../src/store/projection.js';
import { apiToken, dataplane, dataplaneKey, deleted, mesh, meshKey, signingKey, upserted } from './fixtures.js';

const base = applyEvents(emptyProjection(), [
  upserted(1, mesh('a')),
  upserted(2, mesh('b')),
  upserted(3, dataplane('a', 'a-1')),
  upserted(4, dataplane('b', 'b-1')),
]);

describe('credentials in the projection', () => {
  const withKeys = applyEvents(base, [upserted(5, signingKey('a', 'k1')), upserted(6, apiToken('ops'))]);

  it('keeps keys and API tokens apart from the meshes, whose objects stay as they were', () => {
    expect([...withKeys.credentials.values()].map((stored) => stored.resource.name)).toEqual(['k1', 'ops']);
    expect(withKeys.meshes).toBe(base.meshes);
    // A batch that touches no credential keeps their map: recheck compares it by identity.
    expect(applyEvents(withKeys, [upserted(7, dataplane('b', 'b-2'))]).credentials).toBe(withKeys.credentials);
  });

  it('drops a mesh’s keys with the mesh, and keeps global ones', () => {
    const after = applyEvents(withKeys, [deleted(7, meshKey('a'))]);
    expect([...after.credentials.values()].map((stored) => stored.resource.name)).toEqual(['ops']);
  });

  it('skips a key for a mesh that does not exist', () => {
    expect(applyEvents(base, [upserted(5, signingKey('nowhere', 'k'))]).credentials.size).toBe(0);
  });

  it('survives a checkpoint: the projection of a projection’s checkpoint holds the same credentials', () => {
    const restored = projectionOf(checkpointOf(withKeys));
    expect([...restored.credentials.entries()]).toEqual([...withKeys.credentials.entries()]);
  });
});

describe('applyEvents', () => {
  it('starts from revision 0 with no meshes', () => {
    const projection = emptyProjection();
    expect(projection.revision).toBe(0);
    expect(projection.meshes.size).toBe(0);
  });

  it('folds events into meshes and their dataplanes at the last seq', () => {
    expect(base.revision).toBe(4);
    expect([...base.meshes.keys()]).toEqual(['a', 'b']);
    expect(base.meshes.get('a')?.dataplanes.get('a-1')).toEqual({
      resource: dataplane('a', 'a-1'),
      version: 1,
      seq: 3,
      updatedAt: '2024-01-01T00:00:00.000Z',
    });
  });

  it('gives a new object only to the meshes a batch touches', () => {
    const next = applyEvents(base, [upserted(5, dataplane('a', 'a-2')), upserted(6, dataplane('a', 'a-3'))]);
    expect(next.meshes.get('b')).toBe(base.meshes.get('b'));
    expect(next.meshes.get('a')).not.toBe(base.meshes.get('a'));
    expect([...next.meshes.get('a')!.dataplanes.keys()]).toEqual(['a-1', 'a-2', 'a-3']);
  });

  it('leaves the projection it was given unchanged', () => {
    applyEvents(base, [upserted(5, dataplane('a', 'a-2')), deleted(6, meshKey('b')), upserted(7, mesh('c'))]);
    expect(base.revision).toBe(4);
    expect([...base.meshes.keys()]).toEqual(['a', 'b']);
    expect([...base.meshes.get('a')!.dataplanes.keys()]).toEqual(['a-1']);
  });

  it('shares the dataplanes of a mesh when only the Mesh itself changed', () => {
    const next = applyEvents(base, [upserted(5, mesh('a'), 2)]);
    expect(next.meshes.get('a')).not.toBe(base.meshes.get('a'));
    expect(next.meshes.get('a')!.mesh.version).toBe(2);
    expect(next.meshes.get('a')!.dataplanes).toBe(base.meshes.get('a')!.dataplanes);
  });

  it('keeps a mesh’s object when a batch deletes a dataplane it does not have', () => {
    const next = applyEvents(base, [deleted(5, dataplaneKey('a', 'missing'))]);
    expect(next.revision).toBe(5);
    expect(next.meshes).toBe(base.meshes);
  });

  it('removes a dataplane it deletes', () => {
    const next = applyEvents(base, [deleted(5, dataplaneKey('a', 'a-1'))]);
    expect(next.meshes.get('a')!.dataplanes.size).toBe(0);
  });

  it('removes a deleted Mesh with its dataplanes, and a re-created one starts empty', () => {
    const withoutB = applyEvents(base, [deleted(5, meshKey('b'))]);
    expect(withoutB.meshes.has('b')).toBe(false);
    expect(withoutB.meshes.get('a')).toBe(base.meshes.get('a'));
    const recreated = applyEvents(base, [deleted(5, meshKey('b')), upserted(6, mesh('b'), 3)]);
    expect(recreated.meshes.get('b')!.dataplanes.size).toBe(0);
  });

  it('skips a Dataplane event for a mesh that does not exist, but advances the revision', () => {
    const next = applyEvents(base, [upserted(5, dataplane('ghost', 'g-1'))]);
    expect(next.revision).toBe(5);
    expect(next.meshes).toBe(base.meshes);
  });

  it('applies each event once: events at or below the revision are skipped', () => {
    expect(applyEvents(base, [upserted(3, dataplane('a', 'a-1', 9999)), upserted(4, mesh('z'))])).toBe(base);
    const next = applyEvents(base, [upserted(4, mesh('z')), upserted(5, mesh('y'))]);
    expect([...next.meshes.keys()]).toEqual(['a', 'b', 'y']);
  });

  it('applies events after a gap in seqs', () => {
    const next = applyEvents(base, [upserted(9, mesh('c')), upserted(12, mesh('d'))]);
    expect(next.revision).toBe(12);
    expect(next.meshes.has('c') && next.meshes.has('d')).toBe(true);
  });

  it('applies a batch’s later event over an earlier one for the same key', () => {
    const next = applyEvents(base, [upserted(5, dataplane('a', 'a-1', 20001), 2), upserted(6, dataplane('a', 'a-1', 20002), 3)]);
    const stored = next.meshes.get('a')!.dataplanes.get('a-1')!;
    expect(stored.version).toBe(3);
    expect(stored.resource.networking.inbound[0]!.port).toBe(20002);
  });
});
