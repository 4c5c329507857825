import type { ConfigurationType, ResourceKey } from '../mesh/index.js';
import { UsageError } from './errors.js';

// What `chancery get TYPE` accepts, as kubectl accepts `pod`, `pods` and `po`.
const TYPE_WORDS: Readonly<Record<string, ConfigurationType>> = {
  mesh: 'Mesh',
  meshes: 'Mesh',
  dataplane: 'Dataplane',
  dataplanes: 'Dataplane',
  dp: 'Dataplane',
  dps: 'Dataplane',
};

/** The resource type a command-line word names, in any case. */
export function resourceTypeOf(word: string): ConfigurationType {
  const type = TYPE_WORDS[word.toLowerCase()];
  if (type === undefined) throw new UsageError(`unknown resource type "${word}": use mesh(es), dataplane(s) or dp`);
  return type;
}

/** The key of resource `name` of `type`; `mesh` is ignored for a Mesh, which is its own. */
export function keyFor(type: ConfigurationType, mesh: string, name: string): ResourceKey {
  return type === 'Mesh' ? { type, mesh: name, name } : { type, mesh, name };
}

/** The API path of one resource (DESIGN §7). */
export function resourcePath(key: ResourceKey): string {
  const mesh = `/meshes/${encodeURIComponent(key.mesh)}`;
  return key.type === 'Mesh' ? mesh : `${mesh}/dataplanes/${encodeURIComponent(key.name)}`;
}

/** The API path listing a type: every Mesh, or the Dataplanes of `mesh`. */
export function collectionPath(type: ConfigurationType, mesh: string): string {
  return type === 'Mesh' ? '/meshes' : `/meshes/${encodeURIComponent(mesh)}/dataplanes`;
}
