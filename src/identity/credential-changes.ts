import type { Projection } from '../store/index.js';

/**
 * Whether `next` may admit differently from `previous`: a key or API token was added or removed,
 * or a mesh was created, deleted or changed its `dataplaneAuth`. The projection keeps its
 * credentials' map while none changes, so the common case is one comparison and a walk of the
 * meshes.
 */
export function credentialsChanged(previous: Projection, next: Projection): boolean {
  if (previous.credentials !== next.credentials || previous.meshes.size !== next.meshes.size) return true;
  for (const [name, state] of next.meshes) {
    const before = previous.meshes.get(name);
    if (before === undefined || before.mesh.resource.dataplaneAuth !== state.mesh.resource.dataplaneAuth) return true;
  }
  return false;
}
