import type { ResourceKey } from '../mesh/index.js';

/** How errors and logs name a resource: `Mesh default`, `Dataplane default/backend-1`. */
export function describeKey(key: ResourceKey): string {
  return key.type === 'Mesh' ? `Mesh ${key.name}` : `${key.type} ${key.mesh}/${key.name}`;
}
