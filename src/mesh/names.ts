/**
 * The names of generated xDS resources. They are a contract (DESIGN §6): users, dashboards
 * and gRPC targets (`xds:///<service>`) rely on them, so each is built here and nowhere else.
 */

/** The Envoy listener for an inbound: bound to the dataplane's address and the inbound port. */
export function inboundListenerName(address: string, port: number): string {
  return `inbound:${address}:${port}`;
}

/** The Envoy listener for an outbound: always bound to loopback, where the app calls it. */
export function outboundListenerName(port: number): string {
  return `outbound:127.0.0.1:${port}`;
}

/** The static cluster an Envoy inbound forwards to: the local application's port. */
export function localClusterName(servicePort: number): string {
  return `localhost:${servicePort}`;
}

/**
 * The name of a service's Listener, RouteConfiguration, Cluster and ClusterLoadAssignment.
 * It is the service itself, because a gRPC client asks for Listener `<service>` when it
 * dials `xds:///<service>` (grpc-js-xds `client_default_listener_resource_name_template` `%s`).
 */
export function serviceResourceName(service: string): string {
  return service;
}

/**
 * The SDS Secret holding a node's workload certificate and key: the same name on every node (each
 * is sent its own), so a renewal changes the Secret's version, never a Listener or Cluster.
 */
export const IDENTITY_SECRET = 'mtls:identity';

/** The SDS Secret holding a mesh's trust bundle: every CA of the mesh. */
export function trustSecretName(mesh: string): string {
  return `mtls:trust:${mesh}`;
}

/**
 * The Listener an xDS-enabled gRPC server bound to `address:port` asks for (gRFC A36): the
 * template `chancery bootstrap grpc --certificates` gives it, with `%s` the address and port
 * as gRPC writes them (an IPv6 address in brackets).
 */
export function serverListenerName(address: string, port: number): string {
  return `grpc/server?xds.resource.listening_address=${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/** What every server Listener's name starts with: how a gRPC server's subscription is told from a client's. */
export const SERVER_LISTENER_PREFIX = 'grpc/server?';

/**
 * The cluster (and ClusterLoadAssignment) of the endpoints of `service` whose inbounds carry all
 * of `tags`, a MeshHTTPRoute's MeshServiceSubset: `echo:version=v2`. A service is a DNS label, so
 * the `:` keeps it apart from every service's own name; tags are sorted, and escaped so that two
 * subsets never share a name.
 */
export function subsetClusterName(service: string, tags: Readonly<Record<string, string>>): string {
  const pairs = Object.keys(tags)
    .sort()
    .map((key) => `${encodeURIComponent(key)}=${encodeURIComponent(tags[key]!)}`);
  return `${serviceResourceName(service)}:${pairs.join(',')}`;
}
