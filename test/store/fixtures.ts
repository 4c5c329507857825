import type { Dataplane, Mesh, ResourceKey, Valid } from '../../src/mesh/resources.js';
import { asResourceVersion, asSeq, type Author, type ResourceEvent } from '../../src/store/types.js';

export const author: Author = { instance: 'test' };

export function mesh(name: string): Valid<Mesh> {
  return { type: 'Mesh', name } as Valid<Mesh>;
}

export function dataplane(meshName: string, name: string, port = 10001): Valid<Dataplane> {
  const value: Dataplane = {
    type: 'Dataplane',
    mesh: meshName,
    name,
    networking: { address: '127.0.0.1', inbound: [{ port, servicePort: port, tags: { service: name } }], outbound: [] },
  };
  return value as Valid<Dataplane>;
}

export function meshKey(name: string): ResourceKey {
  return { type: 'Mesh', mesh: name, name };
}

export function dataplaneKey(meshName: string, name: string): ResourceKey {
  return { type: 'Dataplane', mesh: meshName, name };
}

const at = '2024-01-01T00:00:00.000Z';

export function upserted(seq: number, resource: Valid<Mesh> | Valid<Dataplane>, version = 1): ResourceEvent {
  const key = resource.type === 'Mesh' ? meshKey(resource.name) : dataplaneKey(resource.mesh, resource.name);
  return { seq: asSeq(seq), key, version: asResourceVersion(version), at, by: author, kind: 'upserted', resource };
}

export function deleted(seq: number, key: ResourceKey, version = 2): ResourceEvent {
  return { seq: asSeq(seq), key, version: asResourceVersion(version), at, by: author, kind: 'deleted' };
}
