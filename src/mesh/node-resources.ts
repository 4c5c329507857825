import { anyOf, CLUSTER, encodeResource, LISTENER, ResourceSet, type EncodedResource } from '../xds/index.js';
import type { Held } from './generation-input.js';
import { CONNECT_TIMEOUT, TCP_PROXY, socketAddress, statPrefix } from './envoy-fragments.js';
import { inboundListenerName, localClusterName, outboundListenerName } from './names.js';
import type { MeshServices } from './mesh-services.js';
import type { Dataplane } from './resources.js';
import type { InboundTls } from './resources.js';
import { edsCluster } from './service-resources.js';
import { downstreamTransportSocket, TLS_INSPECTOR_FILTER, tlsSecretNames, upstreamTransportSocket } from './tls-contexts.js';

/** Which of a node's listeners and clusters speak mTLS (tls-contexts.ts decides). */
export interface NodeTlsPlan {
  /** Equal keys, equal plans: what the node's resources are memoised on beside the Dataplane. */
  readonly key: string;
  readonly mesh: string;
  /** What the node's inbound listeners accept. */
  readonly inbound: InboundTls;
  /** Whether the outbound to `service` speaks mTLS. */
  outboundTls(service: string): boolean;
}

/** No TLS anywhere: a mesh without mTLS. */
export const PLAINTEXT: NodeTlsPlan = Object.freeze({ key: '', mesh: '', inbound: 'plaintext', outboundTls: () => false });

/** What a dataplane gets for itself: an Envoy's wildcard LDS and CDS sets (DESIGN §6). */
export interface NodeResources {
  readonly listeners: ResourceSet;
  readonly clusters: ResourceSet;
  /** The services its outbounds call, sorted and distinct. */
  readonly outboundServices: readonly string[];
}

// A stored Dataplane is a new object only when it is written, so its resources are encoded
// once per write (and TLS plan), not once per push or per change elsewhere in the mesh.
const memo = new WeakMap<Held<Dataplane>, { readonly key: string; readonly resources: NodeResources }>();

/**
 * A dataplane's own resources, built once per stored object and TLS plan. `services` only lends
 * the EDS clusters it already encoded; a cluster depends on its service name alone, so what is
 * built does not depend on the mesh state it was first built with.
 */
export function nodeResources(stored: Held<Dataplane>, services: MeshServices, plan: NodeTlsPlan = PLAINTEXT): NodeResources {
  const held = memo.get(stored);
  if (held?.key === plan.key) return held.resources;
  const resources = build(stored.resource, services, plan);
  memo.set(stored, { key: plan.key, resources });
  return resources;
}

function build(dataplane: Dataplane, services: MeshServices, plan: NodeTlsPlan): NodeResources {
  const { address, inbound, outbound } = dataplane.networking;
  // Keyed by name: two inbounds may share a servicePort and two outbounds a service, and a
  // response must never carry one name twice (xDS "Grouping").
  const listeners = new Map<string, EncodedResource>();
  const clusters = new Map<string, EncodedResource>();
  for (const { port, servicePort } of inbound) {
    const cluster = localClusterName(servicePort);
    const listener = inboundListenerName(address, port);
    listeners.set(listener, tcpProxyListener(listener, address, port, cluster, 'INBOUND', plan));
    if (!clusters.has(cluster)) clusters.set(cluster, localCluster(cluster, servicePort));
  }
  for (const { port, service } of outbound) {
    const listener = outboundListenerName(port);
    const cluster = plan.outboundTls(service) ? edsCluster(service, upstreamTransportSocket(plan.mesh, service), tlsSecretNames(plan.mesh)) : (services.service(service)?.cluster ?? edsCluster(service));
    listeners.set(listener, tcpProxyListener(listener, '127.0.0.1', port, cluster.name, 'OUTBOUND', plan));
    clusters.set(cluster.name, cluster);
  }
  const outboundServices = [...new Set(outbound.map(({ service }) => service))].sort();
  return Object.freeze({
    listeners: new ResourceSet(listeners.values()),
    clusters: new ResourceSet(clusters.values()),
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
  plan: NodeTlsPlan,
): EncodedResource {
  const filters = [
    {
      name: 'envoy.filters.network.tcp_proxy',
      typed_config: anyOf(TCP_PROXY, {
        stat_prefix: statPrefix(cluster),
        cluster,
        ...(direction === 'OUTBOUND' && { max_connect_attempts: { value: OUTBOUND_CONNECT_ATTEMPTS } }),
      }),
    },
  ];
  const inbound = direction === 'INBOUND' ? plan.inbound : 'plaintext';
  if (inbound === 'plaintext') return encodeResource(LISTENER, name, { name, address: socketAddress(address, port), traffic_direction: direction, filter_chains: [{ filters }] });
  const mtls = { filter_chain_match: { transport_protocol: 'tls' }, transport_socket: downstreamTransportSocket(plan.mesh), filters };
  return encodeResource(
    LISTENER,
    name,
    {
      name,
      address: socketAddress(address, port),
      traffic_direction: direction,
      // Permissive: the inspector tells a TLS ClientHello from plaintext, and each gets its chain
      // (Kuma's and Istio's PERMISSIVE). Strict: only the mTLS chain, so plaintext matches nothing;
      // the inspector stays, so that permissive ↔ strict changes filter chains alone, which Envoy
      // updates in place rather than draining the whole listener.
      ...(inbound === 'permissive'
        ? { listener_filters: [TLS_INSPECTOR_FILTER], filter_chains: [mtls, { filter_chain_match: { transport_protocol: 'raw_buffer' }, filters }] }
        : { listener_filters: [TLS_INSPECTOR_FILTER], filter_chains: [mtls] }),
    },
    [],
    tlsSecretNames(plan.mesh),
  );
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
