import { DNS_LABEL_RULE, isDnsLabel, type ResourceKey } from '../mesh/index.js';
import { NotFoundError } from '../store/index.js';
import type { CredentialStore } from './credential-store.js';
import { InvalidIdentityRequestError } from './errors.js';

/**
 * Checks that a dataplane token or service account may be made for Dataplane `name` of `mesh`:
 * both names are DNS labels, so `<mesh>.<name>` is a node id a stream can open as, and the
 * Dataplane exists, so the credential speaks for a node Chancery can serve. Throws
 * `InvalidIdentityRequestError` naming the field, or `NotFoundError` for the Mesh or the
 * Dataplane that does not exist; nothing is written either way.
 */
export function checkDataplaneSubject(store: Pick<CredentialStore, 'get'>, mesh: string, name: string): void {
  if (!isDnsLabel(mesh)) throw new InvalidIdentityRequestError('mesh', DNS_LABEL_RULE);
  if (!isDnsLabel(name)) throw new InvalidIdentityRequestError('name', DNS_LABEL_RULE);
  const dataplane: ResourceKey = { type: 'Dataplane', mesh, name };
  if (store.get(dataplane) !== undefined) return;
  const meshKey: ResourceKey = { type: 'Mesh', mesh, name: mesh };
  throw new NotFoundError(store.get(meshKey) === undefined ? meshKey : dataplane);
}
