import { contentHash } from './content-hash.js';
import type { EncodedResource } from './encode.js';

/**
 * Sets of at most this many resources are searched by scanning their list: every node has sets
 * of its own (its inbound listeners, its local clusters), one or two resources each, and a Map
 * cost each of them 0.2 KB (bench/README.md).
 */
const SCANNED = 8;

/**
 * An immutable set of resources of one type, sorted by name, with a content-hash version.
 * Sets are shared: the per-service resources of a mesh are one set referenced by every
 * node's snapshot at that revision.
 */
export class ResourceSet {
  static readonly empty = new ResourceSet([]);

  readonly version: string;
  readonly list: readonly EncodedResource[];
  /** The resources by name, for a set larger than SCANNED. */
  readonly #byName: ReadonlyMap<string, EncodedResource> | undefined;

  /** Throws on a duplicate name: a response must never carry one name twice (xDS "Grouping"). */
  constructor(resources: Iterable<EncodedResource>) {
    const list = [...resources].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (let i = 1; i < list.length; i++) {
      const resource = list[i]!;
      if (resource.name === list[i - 1]!.name) throw new Error(`duplicate resource name ${resource.name} (${resource.typeUrl})`);
    }
    this.list = Object.freeze(list);
    this.#byName = list.length > SCANNED ? new Map(list.map((resource) => [resource.name, resource])) : undefined;
    this.version = versionOf(this.list);
  }

  get size(): number {
    return this.list.length;
  }

  get(name: string): EncodedResource | undefined {
    if (this.#byName !== undefined) return this.#byName.get(name);
    for (const resource of this.list) if (resource.name === name) return resource;
    return undefined;
  }
}

/** The version of a response carrying exactly these resources, in this order (I6). */
export function versionOf(resources: readonly EncodedResource[]): string {
  if (resources.length === 0) return '';
  return contentHash(resources.map((resource) => `${resource.name}\0${resource.version}`).join('\n'));
}
