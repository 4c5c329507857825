import { CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET, SHORT_NAME, type EncodedResource, type Snapshot, type TypeSnapshot, type TypeUrl } from '../xds/index.js';
import type { TypeSubscription } from './node-facts.js';

/** What a node holds of each type from a snapshot: its resources by name. */
export type Held = Readonly<Record<TypeUrl, ReadonlyMap<string, EncodedResource>>>;

/** An Envoy's subscription to Listeners and Clusters when nothing else is known: wildcard (xDS). */
const WILDCARD: TypeSubscription = { wildcard: true, names: [] };

/**
 * The types whose resources name others (I5): a Listener its RouteConfiguration over RDS, a
 * Cluster its ClusterLoadAssignment over EDS. A client asks for what the parent names.
 */
const CHAINS = [
  [LISTENER, ROUTE],
  [CLUSTER, ENDPOINT],
] as const;

/**
 * What a node holds of `snapshot`, as a session would send it: Listeners and Clusters as the
 * node subscribed (wildcard, the Envoy default, when its subscriptions are not known), and the
 * RouteConfigurations and ClusterLoadAssignments they name. A node that names resources itself
 * (a proxyless gRPC client) also holds the routes and endpoints it subscribed to by name.
 *
 * The names a wildcard subscriber asks for follow what its parents name in this snapshot, not
 * its current subscription: after a change, Envoy asks for the EDS of the clusters it has then.
 * Secrets (SDS) are those its Listeners and Clusters name (I8).
 */
export function heldResources(snapshot: Snapshot, subscriptions: Readonly<Record<string, TypeSubscription>> = {}): Held {
  const held = {} as Record<TypeUrl, ReadonlyMap<string, EncodedResource>>;
  for (const [parent, child] of CHAINS) {
    const subscription = subscriptions[SHORT_NAME[parent]] ?? WILDCARD;
    const parents = select(snapshot.types[parent], subscription);
    const named = new Set<string>();
    for (const resource of parents.values()) for (const name of resource.references) named.add(name);
    if (!subscription.wildcard) for (const name of subscriptions[SHORT_NAME[child]]?.names ?? []) named.add(name);
    held[parent] = parents;
    held[child] = select(snapshot.types[child], { wildcard: false, names: [...named] });
  }
  const secrets = new Set<string>();
  for (const type of [LISTENER, CLUSTER] as const) for (const resource of held[type].values()) for (const name of resource.secrets) secrets.add(name);
  held[SECRET] = select(snapshot.types[SECRET], { wildcard: false, names: [...secrets] });
  return held;
}

/** The resources of `type` a subscription selects: the node's whole set when wildcard, and each name it exists for. */
function select(type: TypeSnapshot, subscription: TypeSubscription): ReadonlyMap<string, EncodedResource> {
  const selected = new Map<string, EncodedResource>();
  if (subscription.wildcard) for (const resource of type.wildcard.list) selected.set(resource.name, resource);
  for (const name of subscription.names) {
    const found = type.get(name);
    if (found !== undefined) selected.set(name, found);
  }
  return selected;
}
