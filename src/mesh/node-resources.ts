import { memoisedOn } from '../common/index.js';
import type { PolicySelection } from '../policies/index.js';
import { CLUSTER, encodeResource, LISTENER, ResourceSet, type EncodedResource } from '../xds/index.js';
import type { Held } from './generation-input.js';
import { CONNECT_TIMEOUT, socketAddress, tcpProxyFilter } from './envoy-fragments.js';
import { inboundListenerName, localClusterName } from './names.js';
import type { MeshServices } from './mesh-services.js';
import type { Dataplane, InboundTls } from './resources.js';
import { envoyOutbound } from './outbound-resources.js';
import { clusterPlanOf, routePlanOf } from './plans.js';
import type { ClusterRef } from './route-plan.js';
import { downstreamTransportSocket, envoyTlsCluster, TLS_INSPECTOR_FILTER, tlsSecretNames } from './tls-contexts.js';

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

/** What a dataplane gets for itself: an Envoy's wildcard LDS and CDS sets, and its outbounds' routes (DESIGN §6). */
export interface NodeResources {
  readonly listeners: ResourceSet;
  readonly clusters: ResourceSet;
  /** The RouteConfiguration of each outbound to an HTTP service, named after its listener. */
  readonly routes: ResourceSet;
  /** The services whose own clusters its outbounds use, sorted and distinct. */
  readonly outboundServices: readonly string[];
  /** The subsets whose clusters its routes name: their endpoints are read at each mesh state. */
  readonly subsets: readonly ClusterRef[];
}

// A stored Dataplane is a new object only when it is written, so its resources are encoded
// once per write and per change of what its outbounds are rendered from (the protocol of each
// service it calls, the policies for those calls), not once per push or per unrelated change.
const memo = new WeakMap<Held<Dataplane>, { readonly context: string; readonly own: NodeResources }>();

/**
 * A dataplane's own resources, built once per stored object and outbound context. `selection`
 * holds the policies that select the dataplane; `services` the mesh state its outbounds' routes
 * and clusters are planned at.
 */
export function nodeResources(stored: Held<Dataplane>, services: MeshServices, selection: PolicySelection, tls: NodeTlsPlan = PLAINTEXT): NodeResources {
  const context = `${tls.key}\n${outboundContext(stored.resource, services, selection)}`;
  const held = memo.get(stored);
  if (held?.context === context) return held.own;
  const own = build(stored, services, selection, tls);
  memo.set(stored, { context, own });
  return own;
}

/** What a dataplane's resources depend on besides itself: how each outbound is planned, its clusters included. */
function outboundContext(dataplane: Dataplane, services: MeshServices, selection: PolicySelection): string {
  let context = '';
  for (const { service } of dataplane.networking.outbound) {
    const plan = routePlanOf(services, 'envoy', selection.outbound(service));
    context += plan.key;
    for (const ref of plan.clusters) context += clusterPlanOf(services, 'envoy', selection.outbound(ref.service)).key;
  }
  return context;
}

interface InboundResources {
  readonly listeners: ReadonlyMap<string, EncodedResource>;
  readonly clusters: ReadonlyMap<string, EncodedResource>;
}

// A node's inbound listeners and local clusters depend on its Dataplane and its TLS plan alone:
// encoded once per write and plan (the last one kept), not again when what its outbounds are
// rendered from changes.
const inbounds = new WeakMap<Held<Dataplane>, { readonly tls: string; readonly own: InboundResources }>();

function inboundResources(stored: Held<Dataplane>, tls: NodeTlsPlan): InboundResources {
  const held = inbounds.get(stored);
  if (held?.tls === tls.key) return held.own;
  const { address, inbound } = stored.resource.networking;
  // Keyed by name: two inbounds may share a servicePort, and a response must never carry one
  // name twice (xDS "Grouping").
  const listeners = new Map<string, EncodedResource>();
  const clusters = new Map<string, EncodedResource>();
  for (const { port, servicePort } of inbound) {
    const cluster = localClusterName(servicePort);
    const listener = inboundListenerName(address, port);
    listeners.set(listener, inboundListener(listener, address, port, cluster, tls));
    if (!clusters.has(cluster)) clusters.set(cluster, localCluster(cluster, servicePort));
  }
  const own = { listeners, clusters };
  inbounds.set(stored, { tls: tls.key, own });
  return own;
}

function build(stored: Held<Dataplane>, services: MeshServices, selection: PolicySelection, tls: NodeTlsPlan): NodeResources {
  const own = inboundResources(stored, tls);
  // Keyed by name, as the inbounds' are: two outbounds may share a service.
  const listeners = new Map(own.listeners);
  const clusters = new Map(own.clusters);
  const routes: EncodedResource[] = [];
  const outboundServices = new Set<string>();
  const subsets = new Map<string, ClusterRef>();
  for (const { port, service } of stored.resource.networking.outbound) {
    const outbound = envoyOutbound(port, service, services, selection);
    listeners.set(outbound.listener.name, outbound.listener);
    if (outbound.route !== undefined) routes.push(outbound.route);
    // Mesh mTLS: the clusters of a service every endpoint of which accepts TLS present the node's certificate (I8).
    for (const cluster of outbound.clusters) clusters.set(cluster.name, tls.outboundTls(serviceOfCluster(cluster.name)) ? envoyTlsCluster(cluster, tls.mesh) : cluster);
    for (const each of outbound.services) outboundServices.add(each);
    for (const ref of outbound.subsetRefs) subsets.set(ref.name, ref);
  }
  return Object.freeze({
    listeners: new ResourceSet(listeners.values()),
    clusters: sharedSet(services, 'clusters', new ResourceSet(clusters.values())),
    routes: routes.length === 0 ? ResourceSet.empty : sharedSet(services, 'routes', new ResourceSet(routes)),
    outboundServices: Object.freeze([...outboundServices].sort()),
    subsets: Object.freeze([...subsets.values()]),
  });
}

// Per mesh state, the nodes' cluster and route sets by content: nodes calling the same services
// under the same policies hold one set, so what is made per set when a snapshot is sealed (its
// type snapshot) is made once for all of them. Listener sets hold each node's own inbounds.
const sharedSets = new WeakMap<MeshServices, Map<string, ResourceSet>>();

function sharedSet(services: MeshServices, kind: 'clusters' | 'routes', set: ResourceSet): ResourceSet {
  return memoisedOn(sharedSets, services, `${kind}\0${set.version}`, () => set);
}

/** An inbound's listener: a TCP proxy to the app, behind the node's mTLS when its plan says so. */
function inboundListener(name: string, address: string, port: number, cluster: string, tls: NodeTlsPlan): EncodedResource {
  const filters = [tcpProxyFilter(cluster, 'INBOUND')];
  const { inbound } = tls;
  if (inbound === 'plaintext') return encodeResource(LISTENER, name, { name, address: socketAddress(address, port), traffic_direction: 'INBOUND', filter_chains: [{ filters }] });
  const mtls = { filter_chain_match: { transport_protocol: 'tls' }, transport_socket: downstreamTransportSocket(tls.mesh), filters };
  return encodeResource(
    LISTENER,
    name,
    {
      name,
      address: socketAddress(address, port),
      traffic_direction: 'INBOUND',
      // Permissive: the inspector tells a TLS ClientHello from plaintext, and each gets its chain
      // (Kuma's and Istio's PERMISSIVE). Strict: only the mTLS chain, so plaintext matches nothing;
      // the inspector stays, so that permissive ↔ strict changes filter chains alone, which Envoy
      // updates in place rather than draining the whole listener.
      listener_filters: [TLS_INSPECTOR_FILTER],
      filter_chains: inbound === 'permissive' ? [mtls, { filter_chain_match: { transport_protocol: 'raw_buffer' }, filters }] : [mtls],
    },
    [],
    tlsSecretNames(tls.mesh),
  );
}

/** The service a cluster's endpoints serve: its name, or what precedes a subset's `:` (names.ts `subsetClusterName`). */
function serviceOfCluster(name: string): string {
  const colon = name.indexOf(':');
  return colon === -1 ? name : name.slice(0, colon);
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
