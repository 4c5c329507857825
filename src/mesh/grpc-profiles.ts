import type { PolicySelection } from '../policies/index.js';
import { ResourceSet, type EncodedResource } from '../xds/index.js';
import type { MeshServices } from './mesh-services.js';
import { clustersOf, routeConfiguration } from './outbound-resources.js';
import { routePlanOf } from './plans.js';

/** The named sets a node's snapshot offers proxyless gRPC clients, per type. */
export interface NamedSets {
  readonly routes: readonly ResourceSet[];
  readonly clusters: readonly ResourceSet[];
  readonly endpoints: readonly ResourceSet[];
}

// Per mesh services and selection (one object per policies map and set of policies: a policy
// rewritten makes new ones): nodes the same policies select share one set per type, as nodes
// without policies share the mesh's own (mesh-services.ts).
const byServices = new WeakMap<MeshServices, WeakMap<PolicySelection, NamedSets>>();

/**
 * What a proxyless gRPC client of a node dialing `xds:///<service>` is offered for every service
 * of the mesh, under the policies that select the node: a service no policy configures keeps
 * the mesh's shared RouteConfiguration and Cluster; one that policies configure gets its own,
 * rendered for what gRPC honours (route-plan.ts, cluster-plan.ts), with the subsets its routes
 * name. The Listener is always the shared one: nothing a policy sets goes on an api_listener.
 */
export function grpcNamedSets(services: MeshServices, selection: PolicySelection): NamedSets {
  const shared = { routes: services.routes, clusters: services.clusters, endpoints: services.endpoints };
  if (selection.empty) return shared;
  let ofServices = byServices.get(services);
  if (ofServices === undefined) byServices.set(services, (ofServices = new WeakMap()));
  let sets = ofServices.get(selection);
  if (sets === undefined) {
    sets = build(services, selection) ?? shared;
    ofServices.set(selection, sets);
  }
  return sets;
}

function build(services: MeshServices, selection: PolicySelection): NamedSets | undefined {
  const routes: EncodedResource[] = [];
  const clusters = new Map<string, EncodedResource>();
  const assignments = new Map<string, EncodedResource>();
  let configured = false;
  for (const name of services.names) {
    const ops = selection.outbound(name);
    const own = services.service(name)!;
    if (ops.policies.length === 0) {
      routes.push(own.route);
      if (!clusters.has(name)) clusters.set(name, own.cluster);
      continue;
    }
    configured = true;
    const plan = routePlanOf(services, 'grpc', ops);
    routes.push(routeConfiguration(name, name, plan));
    const named = clustersOf('grpc', plan.clusters, services, selection);
    for (const cluster of named.clusters) clusters.set(cluster.name, cluster);
    for (const assignment of named.assignments) assignments.set(assignment.name, assignment);
  }
  if (!configured) return undefined;
  return {
    routes: Object.freeze([new ResourceSet(routes)]),
    clusters: Object.freeze([new ResourceSet(clusters.values())]),
    endpoints: assignments.size === 0 ? services.endpoints : Object.freeze([...services.endpoints, new ResourceSet(assignments.values())]),
  };
}
