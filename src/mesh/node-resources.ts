import { memoisedOn, memoisedPair, type PairMemo } from '../common/index.js';
import type { PolicySelection } from '../policies/index.js';
import { CLUSTER, encodeResource, LISTENER, ResourceSet, sameContent, sortedByName, type EncodedResource } from '../xds/index.js';
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

/**
 * What a node's outbounds make, shared by every node of a mesh state with the same outbounds
 * (ports and services), the same policies and the same TLS plan: rendered once for all of them.
 */
interface OutboundPart {
  /** How each outbound is planned, its clusters included: equal contexts, equal resources. */
  readonly context: string;
  readonly listeners: readonly EncodedResource[];
  /** By name: two outbounds may share a service. */
  readonly clusters: ReadonlyMap<string, EncodedResource>;
  readonly routes: ResourceSet;
  readonly outboundServices: readonly string[];
  readonly subsets: readonly ClusterRef[];
}

// Per mesh services and selection, by TLS plan and outbounds: what the nodes sharing them share.
const parts = new WeakMap<MeshServices, WeakMap<PolicySelection, Map<string, OutboundPart>>>();

/**
 * Per selection, the parts made at the mesh services seen last and at those before: a mesh state
 * that changes nothing of how some outbounds are planned (an endpoint change) keeps their part,
 * and every node with it keeps its resources. Two generations only, so that parts no node uses
 * any more (an outbound list rewritten away) go with the next change.
 */
interface CarriedParts {
  services: MeshServices;
  now: Map<string, OutboundPart>;
  before: Map<string, OutboundPart>;
}

const carried = new WeakMap<PolicySelection, CarriedParts>();

function carriedParts(selection: PolicySelection, services: MeshServices): CarriedParts {
  let held = carried.get(selection);
  if (held === undefined) carried.set(selection, (held = { services, now: new Map(), before: new Map() }));
  else if (held.services !== services) {
    held.before = held.now;
    held.now = new Map();
    held.services = services;
  }
  return held;
}

/** The outbounds of `outbound` under `selection` at this mesh state, made once for every node that shares them. */
function outboundPart(outbound: Dataplane['networking']['outbound'], services: MeshServices, selection: PolicySelection, tls: NodeTlsPlan): OutboundPart {
  let bySelection = parts.get(services);
  if (bySelection === undefined) parts.set(services, (bySelection = new WeakMap()));
  const key = partKey(outbound, tls);
  return memoisedOn(bySelection, selection, key, () => {
    const context = outboundContext(outbound, services, selection);
    const held = carriedParts(selection, services);
    const previous = held.before.get(key);
    const part = previous?.context === context ? previous : buildPart(context, outbound, services, selection, tls);
    held.now.set(key, part);
    return part;
  });
}

// Per stored outbound list, the key of the part it makes under the last TLS plan it was asked
// with: its ports and services as text. One string for every lookup, whose hash is computed once,
// where a key made again at each node's generation is hashed again (10,000 times a change).
const partKeys = new WeakMap<Dataplane['networking']['outbound'], string>();

function partKey(outbound: Dataplane['networking']['outbound'], tls: NodeTlsPlan): string {
  const held = partKeys.get(outbound);
  // A key starts with its plan's key and a newline: the plan it was made under, read without a copy.
  if (held !== undefined && held.startsWith(tls.key) && held.charCodeAt(tls.key.length) === NEWLINE) return held;
  const key = `${tls.key}\n${outbound.map(({ port, service }) => `${port} ${service}`).join('\n')}`;
  partKeys.set(outbound, key);
  return key;
}

const NEWLINE = 0x0a;

/** What outbounds' resources depend on besides themselves: how each is planned, its clusters included. */
function outboundContext(outbound: Dataplane['networking']['outbound'], services: MeshServices, selection: PolicySelection): string {
  let context = '';
  for (const { service } of outbound) {
    const plan = routePlanOf(services, 'envoy', selection.outbound(service));
    context += plan.key;
    for (const ref of plan.clusters) context += clusterPlanOf(services, 'envoy', selection.outbound(ref.service)).key;
  }
  return context;
}

function buildPart(context: string, outbound: Dataplane['networking']['outbound'], services: MeshServices, selection: PolicySelection, tls: NodeTlsPlan): OutboundPart {
  const listeners = new Map<string, EncodedResource>();
  const clusters = new Map<string, EncodedResource>();
  const routes: EncodedResource[] = [];
  const outboundServices = new Set<string>();
  const subsets = new Map<string, ClusterRef>();
  for (const { port, service } of outbound) {
    const rendered = envoyOutbound(port, service, services, selection);
    listeners.set(rendered.listener.name, rendered.listener);
    if (rendered.route !== undefined) routes.push(rendered.route);
    // Mesh mTLS: the clusters of a service every endpoint of which accepts TLS present the node's certificate (I8).
    for (const cluster of rendered.clusters) clusters.set(cluster.name, tls.outboundTls(serviceOfCluster(cluster.name)) ? envoyTlsCluster(cluster, tls.mesh) : cluster);
    for (const each of rendered.services) outboundServices.add(each);
    for (const ref of rendered.subsetRefs) subsets.set(ref.name, ref);
  }
  return Object.freeze({
    context,
    listeners: [...listeners.values()],
    clusters,
    routes: routes.length === 0 ? ResourceSet.empty : new ResourceSet(routes),
    outboundServices: Object.freeze([...outboundServices].sort()),
    subsets: Object.freeze([...subsets.values()]),
  });
}

interface InboundResources {
  readonly listeners: ReadonlyMap<string, EncodedResource>;
  readonly clusters: ReadonlyMap<string, EncodedResource>;
  /** The names of its local clusters: with the outbound part, what its cluster set is shared by. */
  readonly clustersKey: string;
}

// A node's inbound listeners and local clusters depend on its Dataplane and what its inbounds accept alone:
// encoded once per write and mode (the last one kept), not again when what its outbounds are
// rendered from changes.
const inbounds = new WeakMap<Held<Dataplane>, { readonly tls: InboundTls; readonly own: InboundResources }>();

function inboundResources(stored: Held<Dataplane>, tls: NodeTlsPlan): InboundResources {
  const held = inbounds.get(stored);
  if (held?.tls === tls.inbound) return held.own;
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
  // A local cluster is made from its name alone (its servicePort): equal names, equal clusters.
  const own = { listeners, clusters, clustersKey: [...clusters.keys()].sort().join('\n') };
  inbounds.set(stored, { tls: tls.inbound, own });
  return own;
}

// A stored Dataplane is a new object only when it is written, so its resources are made once per
// write and per outbound part (per change of how its outbounds are rendered), not once per push
// or per unrelated change.
const memo = new WeakMap<Held<Dataplane>, HeldResources>();

/** A node's resources, with the inbounds and the outbound part they were made from. */
interface HeldResources {
  readonly inbound: InboundResources;
  readonly part: OutboundPart;
  readonly own: NodeResources;
}

/**
 * A dataplane's own resources, made once per stored object, TLS plan and outbound part.
 * `selection` holds the policies that select the dataplane; `services` the mesh state its
 * outbounds' routes and clusters are planned at.
 */
export function nodeResources(stored: Held<Dataplane>, services: MeshServices, selection: PolicySelection, tls: NodeTlsPlan = PLAINTEXT): NodeResources {
  const inbound = inboundResources(stored, tls);
  const part = outboundPart(stored.resource.networking.outbound, services, selection, tls);
  const held = memo.get(stored);
  if (held?.inbound === inbound && held.part === part) return held.own;
  const own = combine(inbound, part, held);
  memo.set(stored, { inbound, part, own });
  return own;
}

// Per outbound part, by the names of a node's local clusters: the cluster set of every node with both.
const clusterSets = new WeakMap<OutboundPart, Map<string, ResourceSet>>();

/**
 * A node's resources from its inbounds and its outbound part; `held`, what it had before.
 * A policy change makes new parts, but most of what a node holds comes out the same: its
 * listener set is kept when its listeners are (no hashing, no new type snapshot when sealed).
 */
function combine(inbound: InboundResources, part: OutboundPart, held: HeldResources | undefined): NodeResources {
  const clusters = memoisedOn(clusterSets, part, inbound.clustersKey, () => new ResourceSet(new Map([...inbound.clusters, ...part.clusters]).values()));
  return Object.freeze({
    listeners: held?.inbound === inbound && sameListeners(held.part.listeners, part.listeners) ? held.own.listeners : listenerSet(inbound, part, held?.own),
    clusters,
    routes: part.routes,
    outboundServices: part.outboundServices,
    subsets: part.subsets,
  });
}

/** The node's listeners: its inbounds' and its outbound part's, kept from `previous` when equal. */
function listenerSet(inbound: InboundResources, part: OutboundPart, previous: NodeResources | undefined): ResourceSet {
  const listeners = new Map(inbound.listeners);
  for (const listener of part.listeners) listeners.set(listener.name, listener);
  const list = sortedByName(listeners.values());
  return previous !== undefined && sameContent(previous.listeners.list, list) ? previous.listeners : new ResourceSet(list);
}

// Per part's listeners, the part that followed it and whether their listeners are equal: every
// node of the old part moves to the same new one (a policy change), and asks once for all.
const followingListeners: PairMemo<readonly EncodedResource[], readonly EncodedResource[], boolean> = new WeakMap();

/** Whether two parts of the same outbounds render the same listeners (so in the same order). */
function sameListeners(before: readonly EncodedResource[], after: readonly EncodedResource[]): boolean {
  return before === after || memoisedPair(followingListeners, before, after, () => sameContent(before, after));
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
