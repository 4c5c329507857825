import { clip } from '../common/index.js';
import { isMeshScoped, type ResourceKey } from '../mesh/index.js';

/**
 * How errors and logs name a resource: `Mesh default`, `Dataplane default/backend-1`, `ApiToken ci`
 * (a global resource's key repeats its name as its mesh). A key
 * read from a URL may name what cannot exist: its names are cut to a label's 63 characters and a bit.
 */
export function describeKey(key: ResourceKey): string {
  const name = clip(key.name, 80);
  return isMeshScoped(key.type) ? `${key.type} ${clip(key.mesh, 80)}/${name}` : `${key.type} ${name}`;
}
