import { memoisedOn } from '../common/index.js';
import { protoDuration, type PolicySelection } from '../policies/index.js';
import { anyOf, encodeResource, LISTENER, ROUTE, type EncodedResource } from '../xds/index.js';
import type { ClusterPlan } from './cluster-plan.js';
import { clusterResource } from './cluster-resources.js';
import { ADS_CONFIG_SOURCE, HTTP_CONNECTION_MANAGER, ROUTER, socketAddress, statPrefix, tcpProxyFilter } from './envoy-fragments.js';
import type { MeshServices } from './mesh-services.js';
import { outboundListenerName } from './names.js';
import { clusterPlanOf, routePlanOf } from './plans.js';
import type { Backend, ClientKind, ClusterRef, RoutePlan } from './route-plan.js';

/** What an Envoy outbound is made of. */
export interface EnvoyOutbound {
  /** An HTTP connection manager whose routes come over RDS, or a TCP proxy to the service's cluster. */
  readonly listener: EncodedResource;
  /** For an HTTP service: its RouteConfiguration, named after the listener. */
  readonly route?: EncodedResource;
  /** Every cluster the outbound's routes name, each configured by the policies for calls to its service. */
  readonly clusters: readonly EncodedResource[];
  /** The ClusterLoadAssignments of the subsets among them, at this mesh state. */
  readonly assignments: readonly EncodedResource[];
  /** The services whose own clusters are among them: their endpoints must be in the snapshot too (I5). */
  readonly services: readonly string[];
  /** The subsets among them, whose endpoints are read at each mesh state. */
  readonly subsetRefs: readonly ClusterRef[];
}

// A cluster once per plan (one per mesh state and effective configuration) and name: several
// outbounds' routes may name it.
const clusters = new WeakMap<ClusterPlan, Map<string, EncodedResource>>();

/**
 * An Envoy outbound to `service` under the policies `selection` holds for the node (I9: a
 * policy shapes routes and clusters, never removes the listener). An HTTP, HTTP/2 or gRPC
 * service gets an HTTP connection manager whose routes come over RDS, from a RouteConfiguration
 * named after the listener; a TCP service stays a TCP proxy.
 */
export function envoyOutbound(port: number, service: string, services: MeshServices, selection: PolicySelection): EnvoyOutbound {
  let bySelection = outbounds.get(services);
  if (bySelection === undefined) outbounds.set(services, (bySelection = new WeakMap()));
  return memoisedOn(bySelection, selection, `${port}\0${service}`, () => renderOutbound(port, service, services, selection));
}

// Per mesh services and selection: the nodes the same policies select share each outbound whole.
const outbounds = new WeakMap<MeshServices, WeakMap<PolicySelection, Map<string, EnvoyOutbound>>>();

function renderOutbound(port: number, service: string, services: MeshServices, selection: PolicySelection): EnvoyOutbound {
  const plan = routePlanOf(services, 'envoy', selection.outbound(service));
  const name = outboundListenerName(port);
  return {
    ...(plan.http
      ? { listener: httpListener(name, port, service, plan.idleTimeout), route: routeConfiguration(name, service, plan) }
      : { listener: tcpListener(name, port, service, plan.idleTimeout) }),
    ...clustersOf('envoy', plan.clusters, services, selection),
  };
}

/** The clusters `refs` name, each with its service's policies for `client`, and the subsets' endpoints. */
export function clustersOf(
  client: ClientKind,
  refs: readonly ClusterRef[],
  services: MeshServices,
  selection: PolicySelection,
): Pick<EnvoyOutbound, 'clusters' | 'assignments' | 'services' | 'subsetRefs'> {
  const encoded: EncodedResource[] = [];
  const assignments: EncodedResource[] = [];
  const whole: string[] = [];
  const subsetRefs: ClusterRef[] = [];
  for (const ref of refs) {
    const plan = clusterPlanOf(services, client, selection.outbound(ref.service));
    encoded.push(memoisedOn(clusters, plan, ref.name, () => clusterResource(ref.name, plan.fields)));
    if (ref.tags === undefined) whole.push(ref.service);
    else {
      subsetRefs.push(ref);
      assignments.push(services.subset(ref.service, ref.tags).assignment);
    }
  }
  return { clusters: encoded, assignments, services: whole, subsetRefs };
}

/**
 * A RouteConfiguration from a plan: one virtual host for every domain, the plan's routes in
 * order (the catch-all last), each with the plan's timeouts and retries.
 */
export function routeConfiguration(name: string, service: string, plan: RoutePlan): EncodedResource {
  return encodeResource(
    ROUTE,
    name,
    {
      name,
      virtual_hosts: [
        {
          name: service,
          domains: ['*'],
          routes: plan.routes.flatMap(({ matches, backends }) => matches.map((match) => ({ match, route: { ...destination(backends), ...plan.action } }))),
        },
      ],
    },
    // The clusters its routes name: what a proxyless gRPC client then asks for over CDS.
    plan.clusters.map((ref) => ref.name),
  );
}

function destination(backends: readonly Backend[]): object {
  if (backends.length === 1) return { cluster: backends[0]!.cluster };
  return { weighted_clusters: { clusters: backends.map(({ cluster, weight }) => ({ name: cluster, weight: { value: weight } })) } };
}

function tcpListener(name: string, port: number, service: string, idleTimeout: string | undefined): EncodedResource {
  return encodeResource(LISTENER, name, {
    name,
    address: socketAddress('127.0.0.1', port),
    traffic_direction: 'OUTBOUND',
    filter_chains: [{ filters: [tcpProxyFilter(service, 'OUTBOUND', idleTimeout)] }],
  });
}

function httpListener(name: string, port: number, service: string, idleTimeout: string | undefined): EncodedResource {
  return encodeResource(
    LISTENER,
    name,
    {
      name,
      address: socketAddress('127.0.0.1', port),
      traffic_direction: 'OUTBOUND',
      filter_chains: [
        {
          filters: [
            {
              name: 'envoy.filters.network.http_connection_manager',
              typed_config: anyOf(HTTP_CONNECTION_MANAGER, {
                stat_prefix: statPrefix(service),
                rds: { route_config_name: name, config_source: ADS_CONFIG_SOURCE },
                http_filters: [{ name: 'envoy.filters.http.router', typed_config: anyOf(ROUTER) }],
                ...(idleTimeout !== undefined && { common_http_protocol_options: { idle_timeout: protoDuration(idleTimeout) } }),
              }),
            },
          ],
        },
      ],
    },
    [name],
  );
}
