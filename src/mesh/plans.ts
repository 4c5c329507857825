import type { OutboundPolicies } from '../policies/index.js';
import { planCluster, type ClusterPlan } from './cluster-plan.js';
import type { MeshServices } from './mesh-services.js';
import { planRoutes, type ClientKind, type RoutePlan } from './route-plan.js';

interface Plans {
  envoy?: RoutePlan;
  grpc?: RoutePlan;
  envoyCluster?: ClusterPlan;
  grpcCluster?: ClusterPlan;
}

// Per mesh services (one object per dataplanes map), per effective configuration (shared by the nodes the same policies select):
// every node calling a service under the same policies is planned once per change.
const byState = new WeakMap<MeshServices, WeakMap<OutboundPolicies, Plans>>();

function plansOf(services: MeshServices, ops: OutboundPolicies): Plans {
  let ofState = byState.get(services);
  if (ofState === undefined) byState.set(services, (ofState = new WeakMap()));
  let plans = ofState.get(ops);
  if (plans === undefined) ofState.set(ops, (plans = {}));
  return plans;
}

/** How calls to `ops.service` are routed for `client`, at this mesh state. */
export function routePlanOf(services: MeshServices, client: ClientKind, ops: OutboundPolicies): RoutePlan {
  const plans = plansOf(services, ops);
  return (plans[client] ??= planRoutes(client, ops, services.protocol(ops.service).protocol, services));
}

/** What the clusters of `ops.service` carry for `client`, at this mesh state. */
export function clusterPlanOf(services: MeshServices, client: ClientKind, ops: OutboundPolicies): ClusterPlan {
  const plans = plansOf(services, ops);
  const field = client === 'envoy' ? 'envoyCluster' : 'grpcCluster';
  return (plans[field] ??= planCluster(client, ops, services.protocol(ops.service).protocol));
}
