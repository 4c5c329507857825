import { CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET, type EncodedResource, type Snapshot, type TypeSnapshot, type TypeUrl } from '../xds/index.js';
import type { TypeSubscription } from './node-facts.js';

/** What a node holds of each type from a snapshot: its resources by name. */
export type Held = Readonly<Record<TypeUrl, ReadonlyMap<string, EncodedResource>>>;

/** An Envoy's subscription to Listeners and Clusters when nothing else is known: wildcard (xDS). */
const WILDCARD: TypeSubscription = { wildcard: true, names: [] };

/**
 * What a node holds of `snapshot`, as a session would send it: Listeners as the node subscribed
 * (wildcard, the Envoy default, when its subscriptions are not known), the RouteConfigurations
 * they name, Clusters as subscribed (an Envoy: all of them) or, for a client that names them
 * (proxyless gRPC), those its routes name, and the ClusterLoadAssignments the Clusters name.
 *
 * Names follow what the parents name in this snapshot, not the node's current subscription:
 * after a change, Envoy asks for the EDS of the clusters it has then, and a gRPC client for the
 * clusters its new routes name (a split to subsets adds theirs, and drops one no route names).
 * Secrets (SDS) are those its Listeners and Clusters name (I8).
 */
export function heldResources(snapshot: Snapshot, subscriptions: Readonly<Record<string, TypeSubscription>> = {}): Held {
  const listeners = select(snapshot.types[LISTENER], subscriptions['LDS'] ?? WILDCARD);
  const routes = select(snapshot.types[ROUTE], namedBy(listeners));
  const clusterSubscription = subscriptions['CDS'] ?? WILDCARD;
  const clusters = select(snapshot.types[CLUSTER], clusterSubscription.wildcard ? clusterSubscription : namedBy(routes));
  const secrets = new Set<string>();
  for (const parents of [listeners, clusters]) for (const resource of parents.values()) for (const name of resource.secrets) secrets.add(name);
  return {
    [LISTENER]: listeners,
    [ROUTE]: routes,
    [CLUSTER]: clusters,
    [ENDPOINT]: select(snapshot.types[ENDPOINT], namedBy(clusters)),
    [SECRET]: select(snapshot.types[SECRET], { wildcard: false, names: [...secrets] }),
  };
}

/** A subscription to what `parents` name of the next type in the chain (I5). */
function namedBy(parents: ReadonlyMap<string, EncodedResource>): TypeSubscription {
  const names = new Set<string>();
  for (const resource of parents.values()) for (const name of resource.references) names.add(name);
  return { wildcard: false, names: [...names] };
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
