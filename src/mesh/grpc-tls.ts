import { memoised } from '../common/index.js';
import { anyOf, encodeResource, LISTENER, ResourceSet, type EncodedResource } from '../xds/index.js';
import { CERTIFICATE_PROVIDER } from './bootstrap.js';
import { HTTP_CONNECTION_MANAGER, ROUTER, socketAddress, statPrefix } from './envoy-fragments.js';
import type { MeshResources } from './generation-input.js';
import type { Dataplane } from './resources.js';
import type { MeshServices } from './mesh-services.js';
import { serviceSpiffeId } from './mesh-tls.js';
import { serverListenerName } from './names.js';
import { DOWNSTREAM_TLS, UPSTREAM_TLS, withTransportSocket, type MeshTls } from './tls-contexts.js';

/**
 * Mesh mTLS for proxyless gRPC (gRFC A29, A36; reference/mtls.md §3): gRPC never uses SDS, so its
 * TLS contexts name the certificate provider of its bootstrap (`chancery agent`'s files), and the
 * SAN a client checks goes in `match_subject_alt_names`, the only field grpc-js reads. These are
 * the mesh's shared named resources, beside Envoy's own.
 */

const PROVIDER = Object.freeze({ instance_name: CERTIFICATE_PROVIDER });

/** A gRPC client's TLS to `service`: its certificate, the mesh's CAs, and the service's SPIFFE ID, exactly. */
function upstreamTls(mesh: string, service: string): object {
  return {
    name: 'envoy.transport_sockets.tls',
    typed_config: anyOf(UPSTREAM_TLS, {
      common_tls_context: {
        tls_certificate_provider_instance: PROVIDER,
        validation_context: { ca_certificate_provider_instance: PROVIDER, match_subject_alt_names: [{ exact: serviceSpiffeId(mesh, service) }] },
      },
    }),
  };
}

/** A gRPC server's mTLS: a certificate from the mesh is required of every client (A36 servers cannot be permissive). */
const SERVER_TLS = Object.freeze({
  name: 'envoy.transport_sockets.tls',
  typed_config: anyOf(DOWNSTREAM_TLS, {
    require_client_certificate: { value: true },
    common_tls_context: { tls_certificate_provider_instance: PROVIDER, validation_context: { ca_certificate_provider_instance: PROVIDER } },
  }),
});

// Per mesh TLS view (another once a client's TLS or the CAs change) and per named sets (policies
// may give nodes other clusters): made once for every node that shares both.
const clusterSets = new WeakMap<MeshTls, WeakMap<readonly ResourceSet[], readonly ResourceSet[]>>();

/**
 * The named clusters offered gRPC clients, with mTLS: a cluster of a service every endpoint of
 * which accepts TLS gets it (I8), every field policies set kept (tls-contexts.ts `withTransportSocket`).
 */
export function grpcClusters(mesh: string, named: readonly ResourceSet[], tls: MeshTls): readonly ResourceSet[] {
  let bySets = clusterSets.get(tls);
  if (bySets === undefined) clusterSets.set(tls, (bySets = new WeakMap()));
  let sets = bySets.get(named);
  if (sets === undefined) {
    const clusters = named.flatMap((set) => set.list).map((cluster) => {
      const service = serviceOf(cluster.name);
      return tls.clientTls(service) ? withTransportSocket(cluster, `grpc\0${mesh}`, upstreamTls(mesh, service), NO_SECRETS) : cluster;
    });
    sets = Object.freeze([new ResourceSet(clusters)]);
    bySets.set(named, sets);
  }
  return sets;
}

/** gRPC reads its certificates from files: its clusters name no Secret. */
const NO_SECRETS: readonly string[] = Object.freeze([]);

/** The service a cluster's endpoints serve: its name, or what precedes a subset's `:`. */
function serviceOf(cluster: string): string {
  const colon = cluster.indexOf(':');
  return colon === -1 ? cluster : cluster.slice(0, colon);
}

const listenerSets = new WeakMap<MeshResources['dataplanes'], Map<boolean, ResourceSet>>();

/**
 * The Listener of every inbound of the mesh as an xDS-enabled gRPC server asks for it (A36):
 * its address, one HCM whose route answers locally (`non_forwarding_action`), with mTLS in a
 * strict mesh. In permissive, plaintext: a gRPC server cannot tell TLS from plaintext on one
 * port (no `listener_filters`), so it is shown as serving plaintext, and its clients keep to it.
 */
export function serverListeners(state: MeshResources, strict: boolean): ResourceSet {
  let byMode = listenerSets.get(state.dataplanes);
  if (byMode === undefined) listenerSets.set(state.dataplanes, (byMode = new Map()));
  let set = byMode.get(strict);
  if (set === undefined) {
    const listeners = new Map<string, EncodedResource>();
    for (const { resource } of state.dataplanes.values()) for (const listener of inboundListeners(resource, strict)) listeners.set(listener.name, listener);
    set = new ResourceSet(listeners.values());
    byMode.set(strict, set);
  }
  return set;
}

/**
 * Per Dataplane as stored, and mode, the server listeners of its inbounds. The mesh's set is made
 * again whenever one of its dataplanes changes; encoding every inbound's listener again each
 * time held the loop for 0.5–0.7 s at 10,000 dataplanes (bench/README.md, strict): an unchanged
 * Dataplane keeps its listeners.
 */
const inboundListenersOf = { strict: new WeakMap<Dataplane, readonly EncodedResource[]>(), plaintext: new WeakMap<Dataplane, readonly EncodedResource[]>() };

function inboundListeners(dataplane: Dataplane, strict: boolean): readonly EncodedResource[] {
  return memoised(strict ? inboundListenersOf.strict : inboundListenersOf.plaintext, dataplane, () => {
    const { address, inbound } = dataplane.networking;
    return inbound.map(({ port }) => serverListener(serverListenerName(address, port), address, port, strict));
  });
}

function serverListener(name: string, address: string, port: number, strict: boolean): EncodedResource {
  return encodeResource(LISTENER, name, {
    name,
    address: socketAddress(address, port),
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: anyOf(HTTP_CONNECTION_MANAGER, {
              stat_prefix: statPrefix(name),
              route_config: { name: 'server', virtual_hosts: [{ name: 'server', domains: ['*'], routes: [{ match: { prefix: '' }, non_forwarding_action: {} }] }] },
              http_filters: [{ name: 'envoy.filters.http.router', typed_config: anyOf(ROUTER) }],
            }),
          },
        ],
        ...(strict && { transport_socket: SERVER_TLS }),
      },
    ],
  });
}

// A combination of the mesh's service listeners and its server listeners, made once for all its nodes.
const combined = new WeakMap<ResourceSet, { readonly services: readonly ResourceSet[]; readonly sets: readonly ResourceSet[] }>();

/** The named Listener sets of a node of a mesh with mTLS: the services' and the servers'. */
export function grpcListeners(services: MeshServices, servers: ResourceSet): readonly ResourceSet[] {
  const held = combined.get(servers);
  if (held?.services === services.listeners) return held.sets;
  const sets = Object.freeze([...services.listeners, servers]);
  combined.set(servers, { services: services.listeners, sets });
  return sets;
}
