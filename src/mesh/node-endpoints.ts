import { ResourceSet } from '../xds/index.js';
import type { MeshServices } from './mesh-services.js';
import type { NodeResources } from './node-resources.js';

// Per mesh state, by the names a node needs: nodes with the same outbounds share one set.
const byState = new WeakMap<MeshServices, Map<string, ResourceSet>>();

/**
 * The ClusterLoadAssignments a node's own clusters name that the mesh's shared set lacks (I5):
 * empty ones for services nobody serves yet, and those of the subsets its routes send to, read
 * at this mesh state (a subset's endpoints change without the node's resources changing).
 */
export function nodeEndpoints(services: MeshServices, own: NodeResources): ResourceSet {
  const missing = services.missingEndpoints(own.outboundServices);
  if (own.subsets.length === 0) return missing;
  const key = `${missing.version}\n${own.subsets.map((ref) => ref.name).join('\n')}`;
  let ofState = byState.get(services);
  if (ofState === undefined) byState.set(services, (ofState = new Map()));
  let set = ofState.get(key);
  if (set === undefined) {
    set = new ResourceSet([...missing.list, ...own.subsets.map((ref) => services.subset(ref.service, ref.tags!).assignment)]);
    ofState.set(key, set);
  }
  return set;
}
