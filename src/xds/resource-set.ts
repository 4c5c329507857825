import { contentHash } from './content-hash.js';
import type { EncodedResource } from './encode.js';

/** Sets of at most this many resources are searched by scanning their list, never indexed. */
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
  /**
   * The resources by name, made at the first look-up of a set larger than SCANNED. Every node
   * has sets of its own (its listeners, its clusters) that an Envoy, subscribing to them whole,
   * never looks into: an index made up front cost each 0.2–0.5 KB (bench/README.md).
   */
  #byName: ReadonlyMap<string, EncodedResource> | undefined;

  /** Throws on a duplicate name: a response must never carry one name twice (xDS "Grouping"). */
  constructor(resources: Iterable<EncodedResource>) {
    const list = sortedByName(resources);
    for (let i = 1; i < list.length; i++) {
      const resource = list[i]!;
      if (resource.name === list[i - 1]!.name) throw new Error(`duplicate resource name ${resource.name} (${resource.typeUrl})`);
    }
    this.list = Object.freeze(list);
    this.version = versionOf(this.list);
  }

  get size(): number {
    return this.list.length;
  }

  get(name: string): EncodedResource | undefined {
    if (this.list.length <= SCANNED) {
      for (const resource of this.list) if (resource.name === name) return resource;
      return undefined;
    }
    this.#byName ??= new Map(this.list.map((resource) => [resource.name, resource]));
    return this.#byName.get(name);
  }
}

/** The version of a response carrying exactly these resources, in this order (I6). */
export function versionOf(resources: readonly EncodedResource[]): string {
  if (resources.length === 0) return '';
  return contentHash(resources.map((resource) => `${resource.name}\0${resource.version}`).join('\n'));
}

/** Whether two lists hold resources of the same names and versions, in the same order: sets of them are equal. */
export function sameContent(a: readonly EncodedResource[], b: readonly EncodedResource[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i]!.name !== b[i]!.name || a[i]!.version !== b[i]!.version) return false;
  return true;
}

/** `resources` in a new list, sorted by name: the order of a set, its version and its responses. */
export function sortedByName(resources: Iterable<EncodedResource>): EncodedResource[] {
  return [...resources].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
