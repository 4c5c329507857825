import { anyOf, encodeResource, ENDPOINT, LISTENER, ROUTE, type EncodedResource } from '../xds/index.js';
import {
  ADS_CONFIG_SOURCE,
  HTTP_CONNECTION_MANAGER,
  ROUTER,
  socketAddress,
  statPrefix,
} from './envoy-fragments.js';
import { clusterResource, DEFAULT_CLUSTER_FIELDS } from './cluster-resources.js';
import { serviceResourceName } from './names.js';

/** Where a service is served: one inbound of one dataplane. */
export interface Endpoint {
  readonly address: string;
  readonly port: number;
}

/**
 * The four resources of one service, shared by every node of its mesh: what a gRPC client
 * dialing `xds:///<service>` needs, and the EDS cluster and endpoints Envoy outbounds use.
 */
export interface ServiceResources {
  readonly listener: EncodedResource;
  readonly route: EncodedResource;
  readonly cluster: EncodedResource;
  readonly assignment: EncodedResource;
  /** The endpoints `assignment` holds, as a string: equal keys, equal assignment. */
  readonly endpointsKey: string;
}

/**
 * Builds a service's resources, reusing what `previous` (the same service at an earlier
 * revision of the same mesh) already encoded: only the ClusterLoadAssignment depends on the
 * endpoints, and it is re-encoded only when they changed.
 */
export function serviceResources(
  mesh: string,
  service: string,
  endpoints: readonly Endpoint[],
  previous: ServiceResources | undefined,
): ServiceResources {
  const sorted = sortedDistinct(endpoints);
  const endpointsKey = sorted.map(({ address, port }) => `${address} ${port}`).join('\n');
  if (previous?.endpointsKey === endpointsKey) return previous;
  const name = serviceResourceName(service);
  return Object.freeze({
    listener: previous?.listener ?? apiListener(name),
    route: previous?.route ?? routeToCluster(name),
    cluster: previous?.cluster ?? edsCluster(service),
    assignment: loadAssignment(mesh, name, sorted),
    endpointsKey,
  });
}

/**
 * The ClusterLoadAssignment `name` of `endpoints` (a service's, or a subset's), sorted so that
 * every instance encodes the same bytes (I6).
 */
export function loadAssignment(mesh: string, name: string, endpoints: readonly Endpoint[]): EncodedResource {
  return encodeResource(ENDPOINT, name, {
    cluster_name: name,
    // gRPC NACKs a locality without `locality` and silently skips one without
    // `load_balancing_weight` (toolchain-notes §4.3), so both are always set.
    endpoints: [
      {
        locality: { region: mesh, zone: 'default' },
        load_balancing_weight: { value: 1 },
        lb_endpoints: sortedDistinct(endpoints).map(({ address, port }) => ({
          endpoint: { address: socketAddress(address, port) },
          health_status: 'HEALTHY',
        })),
      },
    ],
  });
}

/**
 * The EDS cluster of a service, as a client gets it with no policy. Envoy outbounds use it too,
 * whether or not the service exists yet; encoding interns it, so both uses are one object.
 */
export function edsCluster(service: string): EncodedResource {
  return clusterResource(serviceResourceName(service), DEFAULT_CLUSTER_FIELDS);
}

/**
 * The endpoints of a service no inbound serves yet: none. An Envoy outbound's cluster names
 * it, and every EDS name a cluster uses must be in the snapshot (I5).
 */
export function emptyAssignment(service: string): EncodedResource {
  const name = serviceResourceName(service);
  return encodeResource(ENDPOINT, name, { cluster_name: name, endpoints: [] });
}

/** The Listener a gRPC client asks for when it dials `xds:///<service>`. */
function apiListener(name: string): EncodedResource {
  return encodeResource(
    LISTENER,
    name,
    {
      name,
      api_listener: {
        api_listener: anyOf(HTTP_CONNECTION_MANAGER, {
          stat_prefix: statPrefix(name),
          rds: { route_config_name: name, config_source: ADS_CONFIG_SOURCE },
          // gRPC requires the router to be the last HTTP filter.
          http_filters: [{ name: 'envoy.filters.http.router', typed_config: anyOf(ROUTER) }],
        }),
      },
    },
    [name],
  );
}

function routeToCluster(name: string): EncodedResource {
  return encodeResource(
    ROUTE,
    name,
    { name, virtual_hosts: [{ name, domains: ['*'], routes: [{ match: { prefix: '' }, route: { cluster: name } }] }] },
    // The cluster it names, as routeConfiguration's: what a proxyless gRPC client then asks for.
    [name],
  );
}

/** Sorted by address then port, so every instance encodes the same bytes (I6). */
function sortedDistinct(endpoints: readonly Endpoint[]): Endpoint[] {
  const sorted = [...endpoints].sort((a, b) =>
    a.address < b.address ? -1 : a.address > b.address ? 1 : a.port - b.port,
  );
  // Two dataplanes claiming one address and port are one endpoint.
  return sorted.filter((e, i) => i === 0 || e.address !== sorted[i - 1]?.address || e.port !== sorted[i - 1]?.port);
}
