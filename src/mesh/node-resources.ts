import { anyOf, CLUSTER, encodeResource, LISTENER, ResourceSet, type EncodedResource } from '../xds/index.js';
import type { Held } from './generation-input.js';
import { CONNECT_TIMEOUT, TCP_PROXY, socketAddress, statPrefix } from './envoy-fragments.js';
import { inboundListenerName, localClusterName, outboundListenerName } from './names.js';
import type { MeshServices } from './mesh-services.js';
import type { Dataplane } from './resources.js';
import { httpOutbound } from './outbound-resources.js';
import { edsCluster } from './service-resources.js';

/** What a dataplane gets for itself: an Envoy's wildcard LDS and CDS sets, and its outbounds' routes (DESIGN §6). */
export interface NodeResources {
  readonly listeners: ResourceSet;
  readonly clusters: ResourceSet;
  /** The RouteConfiguration of each outbound to an HTTP service, named after its listener. */
  readonly routes: ResourceSet;
  /** The services its outbounds call, sorted and distinct. */
  readonly outboundServices: readonly string[];
}

// A stored Dataplane is a new object only when it is written, so its resources are encoded
// once per write and per change of what its outbounds' services speak, not once per push or
// per change elsewhere in the mesh.
const memo = new WeakMap<Held<Dataplane>, { readonly context: string; readonly own: NodeResources }>();

/**
 * A dataplane's own resources, built once per stored object and outbound context (the protocol
 * of each service it calls). `services` also lends the EDS clusters it already encoded; a TCP
 * outbound's cluster depends on its service name alone.
 */
export function nodeResources(stored: Held<Dataplane>, services: MeshServices): NodeResources {
  const context = outboundContext(stored.resource, services);
  const held = memo.get(stored);
  if (held?.context === context) return held.own;
  const own = build(stored.resource, services);
  memo.set(stored, { context, own });
  return own;
}

/** What a dataplane's resources depend on besides itself: the protocol of each service it calls. */
function outboundContext(dataplane: Dataplane, services: MeshServices): string {
  let context = '';
  for (const { service } of dataplane.networking.outbound) context += `${services.protocol(service).protocol} `;
  return context;
}

function build(dataplane: Dataplane, services: MeshServices): NodeResources {
  const { address, inbound, outbound } = dataplane.networking;
  // Keyed by name: two inbounds may share a servicePort and two outbounds a service, and a
  // response must never carry one name twice (xDS "Grouping").
  const listeners = new Map<string, EncodedResource>();
  const clusters = new Map<string, EncodedResource>();
  const routes: EncodedResource[] = [];
  for (const { port, servicePort } of inbound) {
    const cluster = localClusterName(servicePort);
    const listener = inboundListenerName(address, port);
    listeners.set(listener, tcpProxyListener(listener, address, port, cluster, 'INBOUND'));
    if (!clusters.has(cluster)) clusters.set(cluster, localCluster(cluster, servicePort));
  }
  for (const { port, service } of outbound) {
    const { protocol } = services.protocol(service);
    if (protocol !== 'tcp') {
      const http = httpOutbound(port, service, protocol);
      listeners.set(http.listener.name, http.listener);
      routes.push(http.route);
      for (const cluster of http.clusters) clusters.set(cluster.name, cluster);
      continue;
    }
    const listener = outboundListenerName(port);
    const cluster = services.service(service)?.cluster ?? edsCluster(service);
    listeners.set(listener, tcpProxyListener(listener, '127.0.0.1', port, cluster.name, 'OUTBOUND'));
    clusters.set(cluster.name, cluster);
  }
  const outboundServices = [...new Set(outbound.map(({ service }) => service))].sort();
  return Object.freeze({
    listeners: new ResourceSet(listeners.values()),
    clusters: new ResourceSet(clusters.values()),
    routes: routes.length === 0 ? ResourceSet.empty : new ResourceSet(routes),
    outboundServices: Object.freeze(outboundServices),
  });
}

/**
 * Tries per outbound connection: an endpoint whose sidecar is not listening yet (just added)
 * or any more (just removed) costs a retry on the next host, not a failed connection.
 */
const OUTBOUND_CONNECT_ATTEMPTS = 3;

function tcpProxyListener(
  name: string,
  address: string,
  port: number,
  cluster: string,
  direction: 'INBOUND' | 'OUTBOUND',
): EncodedResource {
  return encodeResource(LISTENER, name, {
    name,
    address: socketAddress(address, port),
    traffic_direction: direction,
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.tcp_proxy',
            typed_config: anyOf(TCP_PROXY, {
              stat_prefix: statPrefix(cluster),
              cluster,
              ...(direction === 'OUTBOUND' && { max_connect_attempts: { value: OUTBOUND_CONNECT_ATTEMPTS } }),
            }),
          },
        ],
      },
    ],
  });
}

/**
 * The application behind an Envoy inbound, on loopback. STATIC: its one endpoint is inline,
 * so it needs no EDS (grpc-js-xds NACKs STATIC, but gRPC clients never ask for it).
 */
function localCluster(name: string, servicePort: number): EncodedResource {
  return encodeResource(CLUSTER, name, {
    name,
    type: 'STATIC',
    connect_timeout: CONNECT_TIMEOUT,
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress('127.0.0.1', servicePort) } }] }],
    },
  });
}
