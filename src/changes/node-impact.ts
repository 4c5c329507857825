import { PUSH_ORDER, SHORT_NAME, versionOf, type EncodedResource } from '../xds/index.js';
import type { Held } from './held-resources.js';

/** One resource a node would be sent: its name and version (a content hash, I6). */
export interface ResourceRef {
  readonly name: string;
  readonly version: string;
}

/** What a change does to one type of one node. */
export interface TypeImpact {
  /** The type's version for the node after the change: a SotW response's `version_info`. */
  readonly version: string;
  readonly added: readonly ResourceRef[];
  /** Each with the version the node held before (`was`). */
  readonly changed: readonly (ResourceRef & { readonly was: string })[];
  readonly removed: readonly ResourceRef[];
}

/** Per short type name (CDS, EDS, LDS, RDS), only the types the change touches. */
export type TypeImpacts = Readonly<Partial<Record<string, TypeImpact>>>;

/**
 * What changes between what a node held and what it would hold, per type, in push order:
 * the resources a session would send it anew (added and changed, with their new versions) and
 * those it would no longer be sent. Types left as they were are left out.
 */
export function typeImpacts(before: Held, after: Held, seen?: Map<string, EncodedResource>): TypeImpacts {
  const impacts: Record<string, TypeImpact> = {};
  for (const typeUrl of PUSH_ORDER) {
    const impact = typeImpact(before[typeUrl], after[typeUrl], seen);
    if (impact !== undefined) impacts[SHORT_NAME[typeUrl]] = impact;
  }
  return impacts;
}

/** A node that holds nothing: before it is created, or when its configuration could not be generated. */
export const NOTHING_HELD: Held = Object.fromEntries(PUSH_ORDER.map((typeUrl) => [typeUrl, new Map()])) as unknown as Held;

/**
 * One type's changes; `seen` collects each resource an impact names, by version (old and new),
 * so an answer can render them.
 */
function typeImpact(
  before: ReadonlyMap<string, EncodedResource>,
  after: ReadonlyMap<string, EncodedResource>,
  seen: Map<string, EncodedResource> | undefined,
): TypeImpact | undefined {
  const added: ResourceRef[] = [];
  const changed: (ResourceRef & { was: string })[] = [];
  const removed: ResourceRef[] = [];
  for (const [name, resource] of after) {
    const held = before.get(name);
    if (held !== undefined && held.version === resource.version) continue;
    if (held === undefined) added.push({ name, version: resource.version });
    else {
      changed.push({ name, version: resource.version, was: held.version });
      seen?.set(held.version, held);
    }
    seen?.set(resource.version, resource);
  }
  for (const [name, resource] of before) {
    if (after.has(name)) continue;
    removed.push({ name, version: resource.version });
    seen?.set(resource.version, resource);
  }
  if (added.length + changed.length + removed.length === 0) return undefined;
  const list = [...after.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { version: versionOf(list), added: added.sort(byName), changed: changed.sort(byName), removed: removed.sort(byName) };
}

function byName(a: ResourceRef, b: ResourceRef): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
