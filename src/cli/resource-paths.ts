import type { ConfigurationType, ResourceKey } from '../mesh/index.js';
import { isPolicyType, POLICY_PLURALS, POLICY_TYPES } from '../policies/index.js';
import { UsageError } from './errors.js';

// What `chancery get TYPE` accepts, as kubectl accepts `pod`, `pods` and `po`; a policy by its
// type and by its API collection, as kumactl does (`meshtimeout`, `meshtimeouts`).
const TYPE_WORDS: Readonly<Record<string, ConfigurationType>> = {
  mesh: 'Mesh',
  meshes: 'Mesh',
  dataplane: 'Dataplane',
  dataplanes: 'Dataplane',
  dp: 'Dataplane',
  dps: 'Dataplane',
  ...Object.fromEntries(POLICY_TYPES.flatMap((type) => [[type.toLowerCase(), type], [POLICY_PLURALS[type], type]])),
};

/** The words `resourceTypeOf` names in its refusal. */
export const TYPE_WORDS_HELP = `mesh(es), dataplane(s), dp, ${POLICY_TYPES.map((type) => POLICY_PLURALS[type]).join(', ')}`;

/** The resource type a command-line word names, in any case. */
export function resourceTypeOf(word: string): ConfigurationType {
  const type = TYPE_WORDS[word.toLowerCase()];
  if (type === undefined) throw new UsageError(`unknown resource type "${word}": use ${TYPE_WORDS_HELP}`);
  return type;
}

/** The key of resource `name` of `type`; `mesh` is ignored for a Mesh, which is its own. */
export function keyFor(type: ConfigurationType, mesh: string, name: string): ResourceKey {
  return type === 'Mesh' ? { type, mesh: name, name } : { type, mesh, name };
}

/** The API path of one resource (DESIGN §7). */
export function resourcePath(key: ResourceKey): string {
  return key.type === 'Mesh' ? `/meshes/${encodeURIComponent(key.mesh)}` : `${collectionPath(key.type as ConfigurationType, key.mesh)}/${encodeURIComponent(key.name)}`;
}

/** The API path listing a type: every Mesh, or the Dataplanes (or policies of one type) of `mesh`. */
export function collectionPath(type: ConfigurationType, mesh: string): string {
  if (type === 'Mesh') return '/meshes';
  return `/meshes/${encodeURIComponent(mesh)}/${isPolicyType(type) ? POLICY_PLURALS[type] : 'dataplanes'}`;
}
