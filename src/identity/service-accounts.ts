import { nodeIdOf, type ServiceAccountKey, type Valid } from '../mesh/index.js';
import type { Stored, WriteOptions } from '../store/index.js';
import type { CredentialStore } from './credential-store.js';
import { checkDataplaneSubject } from './dataplane-subject.js';
import { newKeyPair } from './key-pairs.js';

/**
 * A Google service-account key file (`GOOGLE_APPLICATION_CREDENTIALS`). With it and
 * `google_default` channel credentials, grpc-js-xds and gRPC C-core sign their own RS256 JWT
 * on every xDS stream: `kid` the `private_key_id`, `iss` and `sub` the `client_email`, which is
 * the node id here (reference/identity.md §2.3).
 */
export interface ServiceAccountFile {
  readonly type: 'service_account';
  readonly project_id: string;
  readonly private_key_id: string;
  readonly private_key: string;
  readonly client_email: string;
  readonly client_id: string;
}

export interface IssuedServiceAccount {
  readonly file: ServiceAccountFile;
  readonly key: Stored<ServiceAccountKey>;
}

/**
 * Makes a service account for Dataplane `name` of `mesh`: registers the public half of a new key
 * for that dataplane alone, and returns the key file holding the private half, which Chancery
 * does not keep. Rejects as `checkDataplaneSubject` does, before making a key, when the names
 * are not DNS labels or the Dataplane does not exist.
 */
export async function issueServiceAccount(
  store: CredentialStore,
  request: { readonly mesh: string; readonly name: string },
  options: Pick<WriteOptions, 'caller'> = {},
): Promise<IssuedServiceAccount> {
  const { mesh, name } = request;
  checkDataplaneSubject(store, mesh, name);
  const { kid, publicKey, privateKey } = newKeyPair();
  const key: ServiceAccountKey = { type: 'ServiceAccountKey', mesh, name: kid, dataplane: name, publicKey };
  const stored = (await store.put(Object.freeze(key) as Valid<ServiceAccountKey>, { ...options, expected: 'absent' })) as Stored<ServiceAccountKey>;
  const node = nodeIdOf(mesh, name);
  return {
    file: { type: 'service_account', project_id: `chancery-${mesh}`, private_key_id: kid, private_key: privateKey, client_email: node, client_id: node },
    key: stored,
  };
}

/** A service-account key as the API shows it. */
export function publicServiceAccountKey(stored: Stored<ServiceAccountKey>) {
  const { mesh, name, dataplane, publicKey } = stored.resource;
  return { mesh, kid: name, dataplane, publicKey, createdAt: stored.updatedAt };
}
