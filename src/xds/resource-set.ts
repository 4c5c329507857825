import { contentHash } from './content-hash.js';
import type { EncodedResource } from './encode.js';

/**
 * An immutable set of resources of one type, sorted by name, with a content-hash version.
 * Sets are shared: the per-service resources of a mesh are one set referenced by every
 * node's snapshot at that revision.
 */
export class ResourceSet {
  static readonly empty = new ResourceSet([]);

  readonly version: string;
  readonly list: readonly EncodedResource[];
  readonly #byName: ReadonlyMap<string, EncodedResource>;

  /** Throws on a duplicate name: a response must never carry one name twice (xDS "Grouping"). */
  constructor(resources: Iterable<EncodedResource>) {
    const byName = new Map<string, EncodedResource>();
    for (const resource of resources) {
      if (byName.has(resource.name)) throw new Error(`duplicate resource name ${resource.name} (${resource.typeUrl})`);
      byName.set(resource.name, resource);
    }
    this.list = Object.freeze([...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
    this.#byName = byName;
    this.version = versionOf(this.list);
  }

  get size(): number {
    return this.list.length;
  }

  get(name: string): EncodedResource | undefined {
    return this.#byName.get(name);
  }
}

/** The version of a response carrying exactly these resources, in this order (I6). */
export function versionOf(resources: readonly EncodedResource[]): string {
  if (resources.length === 0) return '';
  return contentHash(resources.map((resource) => `${resource.name}\0${resource.version}`).join('\n'));
}
