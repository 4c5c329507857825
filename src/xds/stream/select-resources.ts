import type { EncodedResource } from '../encode.js';
import { versionOf, type ResourceSet } from '../resource-set.js';
import type { TypeSnapshot } from '../snapshot.js';
import type { Subscription } from './subscription.js';

export interface Selection {
  readonly resources: readonly EncodedResource[];
  readonly version: string;
}

// Optimization: nodes that share a TypeSnapshot and subscribe to the same names get the same
// Selection object, so the version is hashed and the response body encoded once for all of
// them rather than once per push (bench/sessions.bench.ts: a change fanned out to 10,000).
const selections = new WeakMap<TypeSnapshot, Map<string, Selection>>();
const wholeSets = new WeakMap<ResourceSet, Selection>();

/** The resources a subscription selects from a type, sorted by name, and their version (I6). */
export function selectResources(subscription: Subscription, type: TypeSnapshot): Selection {
  if (subscription.wildcard && subscription.names.size === 0) return whole(type.wildcard);
  let byKey = selections.get(type);
  if (!byKey) {
    byKey = new Map();
    selections.set(type, byKey);
  }
  let selection = byKey.get(subscription.key);
  if (!selection) {
    selection = select(subscription, type);
    byKey.set(subscription.key, selection);
  }
  return selection;
}

function select(subscription: Subscription, type: TypeSnapshot): Selection {
  const { wildcard } = type;
  const resources: EncodedResource[] = subscription.wildcard ? [...wildcard.list] : [];
  for (const name of subscription.names) {
    if (subscription.wildcard && wildcard.get(name)) continue;
    const found = type.get(name);
    if (found) resources.push(found);
  }
  if (subscription.wildcard && resources.length === wildcard.size) return whole(wildcard);
  resources.sort(byName);
  return { resources: Object.freeze(resources), version: versionOf(resources) };
}

/** A whole set as a selection: its own list and version, shared by every wildcard subscriber. */
function whole(set: ResourceSet): Selection {
  let selection = wholeSets.get(set);
  if (!selection) {
    selection = { resources: set.list, version: set.version };
    wholeSets.set(set, selection);
  }
  return selection;
}

function byName(a: EncodedResource, b: EncodedResource): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
