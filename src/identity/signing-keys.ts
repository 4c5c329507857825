import type { SigningKey, Valid } from '../mesh/index.js';
import type { Stored, WriteOptions } from '../store/index.js';
import type { CredentialStore } from './credential-store.js';
import { newKeyPair } from './key-pairs.js';

/**
 * Adds a new signing key to `mesh`: from now on it signs the mesh's tokens, while the older keys
 * go on verifying theirs until they are deleted. Rejects with `MeshNotFoundError` when the mesh
 * does not exist (the log checks, so a mesh another instance just deleted counts).
 */
export async function rotateSigningKey(store: CredentialStore, mesh: string, options: Pick<WriteOptions, 'caller'> = {}): Promise<Stored<SigningKey>> {
  const { kid, publicKey, privateKey } = newKeyPair();
  const key: SigningKey = { type: 'SigningKey', mesh, name: kid, publicKey, privateKey };
  const stored = await store.put(Object.freeze(key) as Valid<SigningKey>, { ...options, expected: 'absent' });
  return stored as Stored<SigningKey>;
}

/** The key that signs `mesh`'s tokens: its newest; undefined when it has none yet. */
export function currentSigningKey(store: Pick<CredentialStore, 'list'>, mesh: string): Stored<SigningKey> | undefined {
  let newest: Stored<SigningKey> | undefined;
  for (const key of store.list('SigningKey', mesh)) if (newest === undefined || key.seq > newest.seq) newest = key;
  return newest;
}

/** A signing key as the API shows it: never its private half. */
export function publicSigningKey(stored: Stored<SigningKey>, current: Stored<SigningKey> | undefined) {
  const { mesh, name, publicKey } = stored.resource;
  return { mesh, kid: name, publicKey, createdAt: stored.updatedAt, signing: stored === current };
}
