import { ResourceSet } from '../xds/index.js';
import type { MeshServices } from './mesh-services.js';
import type { NodeResources } from './node-resources.js';
import type { ClusterRef } from './route-plan.js';

// Per mesh services (one object per dataplanes map), by the subsets a node's routes name (one
// list for every node of an outbound part, node-resources.ts, whose outbound services it also
// fixes): nodes with the same outbounds share one set, found without building a key per node.
const byServices = new WeakMap<MeshServices, WeakMap<readonly ClusterRef[], ResourceSet>>();

/**
 * The ClusterLoadAssignments a node's own clusters name that the mesh's shared set lacks (I5):
 * empty ones for services nobody serves yet, and those of the subsets its routes send to, read
 * at this mesh state (a subset's endpoints change without the node's resources changing).
 */
export function nodeEndpoints(services: MeshServices, own: NodeResources): ResourceSet {
  const missing = services.missingEndpoints(own.outboundServices);
  if (own.subsets.length === 0) return missing;
  let ofServices = byServices.get(services);
  if (ofServices === undefined) byServices.set(services, (ofServices = new WeakMap()));
  let set = ofServices.get(own.subsets);
  if (set === undefined) {
    set = new ResourceSet([...missing.list, ...own.subsets.map((ref) => services.subset(ref.service, ref.tags!).assignment)]);
    ofServices.set(own.subsets, set);
  }
  return set;
}
