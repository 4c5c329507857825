import { keyOf, type ApiToken, type Dataplane, type Mesh, type Resource, type ResourceKey, type SigningKey, type Valid } from '../../src/mesh/resources.js';
import { asResourceVersion, asSeq, type Author, type ResourceEvent, type ResourceStore } from '../../src/store/types.js';

export const author: Author = { instance: 'test' };

export function mesh(name: string): Valid<Mesh> {
  return { type: 'Mesh', name, dataplaneAuth: 'none' } as Valid<Mesh>;
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

/** A signing key of `meshName` with placeholder PEM: the store keeps it as it is, and never reads it. */
export function signingKey(meshName: string, kid: string): Valid<SigningKey> {
  return { type: 'SigningKey', mesh: meshName, name: kid, publicKey: 'public', privateKey: 'private' } as Valid<SigningKey>;
}

export function apiToken(name: string): Valid<ApiToken> {
  const token: ApiToken = { type: 'ApiToken', name, role: 'reader', meshes: [], secretHash: '00', expiresAt: '2030-01-01T00:00:00.000Z' };
  return token as Valid<ApiToken>;
}

export function meshKey(name: string): ResourceKey {
  return { type: 'Mesh', mesh: name, name };
}

export function dataplaneKey(meshName: string, name: string): ResourceKey {
  return { type: 'Dataplane', mesh: meshName, name };
}

const at = '2024-01-01T00:00:00.000Z';

export function upserted(seq: number, resource: Valid<Resource>, version = 1): ResourceEvent {
  const key = keyOf(resource);
  return { seq: asSeq(seq), key, version: asResourceVersion(version), at, by: author, kind: 'upserted', resource };
}

export function deleted(seq: number, key: ResourceKey, version = 2): ResourceEvent {
  return { seq: asSeq(seq), key, version: asResourceVersion(version), at, by: author, kind: 'deleted' };
}

/** Writes the restart tests' history (`RESTART_HISTORY`) through `store`, the Mesh by caller alice. */
export async function writeRestartHistory(store: ResourceStore): Promise<void> {
  await store.put(mesh('payments'), { caller: 'alice' });
  await store.put(dataplane('payments', 'a'));
  await store.put(dataplane('payments', 'a', 20001), { expected: asResourceVersion(1) });
  await store.put(dataplane('payments', 'b'));
  await store.delete(dataplaneKey('payments', 'b'));
}

/**
 * The events of the history the restart tests write at each layer (the store, the HTTP API of
 * `chancery run`), after Mesh default: Mesh payments; its dataplane a created, then changed; b
 * created, then deleted. Each as `[seq, kind, name, version]`.
 */
export const RESTART_HISTORY = [
  [1, 'upserted', 'default', 1],
  [2, 'upserted', 'payments', 1],
  [3, 'upserted', 'a', 1],
  [4, 'upserted', 'a', 2],
  [5, 'upserted', 'b', 1],
  [6, 'deleted', 'b', 2],
] as const;
