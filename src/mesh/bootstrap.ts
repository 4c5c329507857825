import { isIP } from 'node:net';
import { bareHost, formatHostPort, type HostPort } from '../common/index.js';
import { nodeIdOf } from './node-id.js';
import type { Dataplane, Valid } from './resources.js';

/** How a dataplane's xDS client speaks: State of the World, or Delta (Envoy only). */
export type XdsMode = 'sotw' | 'delta';

export interface EnvoyBootstrapOptions {
  /** Where the Envoy dials Chancery (or the balancer in front of it). */
  readonly xds: HostPort;
  /** The admin listener's port on 127.0.0.1; 0 lets the OS choose (`--admin-address-path` tells which). */
  readonly adminPort: number;
  readonly mode: XdsMode;
  /** A dataplane token, sent as `authorization: Bearer …` when the ADS stream opens. */
  readonly token?: string;
  /** Dial Chancery over TLS, trusting this CA file (a path on the Envoy's host) and checking the name dialled. */
  readonly caFile?: string;
}

/** The name of the static cluster through which an Envoy reaches Chancery. */
export const XDS_CLUSTER = 'chancery-xds';

// Envoy's defaults are 500 ms to 30 s; after a control-plane restart a fleet would wait up
// to half a minute. Envoy jitters each wait, so a fleet still comes back spread out.
const RETRY_BACK_OFF = { base_interval: '0.25s', max_interval: '5s' };
// A dead connection that sent no FIN (a killed host, a dropped NAT entry) is noticed within
// about 35 s by HTTP/2 PING, and the kernel's keepalive backs that up.
const HTTP2_KEEPALIVE = { interval: '30s', timeout: '5s' };
const TCP_KEEPALIVE = { keepalive_time: 30, keepalive_interval: 10, keepalive_probes: 3 };

/**
 * The bootstrap an Envoy sidecar of `dataplane` starts from (envoy.config.bootstrap.v3.Bootstrap,
 * as YAML/JSON fields): its node id and cluster, ADS over gRPC to Chancery with retry back-off
 * and keepalive, the node sent on the first request only (xDS allows it; Chancery reads it
 * there), an admin listener on loopback, the dataplane token in `initial_metadata`, and TLS
 * to Chancery when given a CA file.
 */
export function envoyBootstrap(dataplane: Valid<Dataplane>, options: EnvoyBootstrapOptions): object {
  const { xds } = options;
  const host = bareHost(xds.host);
  return {
    node: { id: nodeIdOf(dataplane.mesh, dataplane.name), cluster: clusterOf(dataplane) },
    dynamic_resources: {
      ads_config: {
        api_type: options.mode === 'delta' ? 'DELTA_GRPC' : 'GRPC',
        transport_api_version: 'V3',
        set_node_on_first_message_only: true,
        grpc_services: [
          {
            envoy_grpc: { cluster_name: XDS_CLUSTER, retry_policy: { retry_back_off: RETRY_BACK_OFF } },
            // Headers sent when the stream opens: where a dataplane token goes.
            initial_metadata: options.token === undefined ? [] : [{ key: 'authorization', value: `Bearer ${options.token}` }],
          },
        ],
      },
      cds_config: { ads: {}, resource_api_version: 'V3' },
      lds_config: { ads: {}, resource_api_version: 'V3' },
    },
    static_resources: {
      clusters: [
        {
          name: XDS_CLUSTER,
          // A hostname (a balancer's DNS name) is resolved and followed; an address is used as is.
          // Envoy's default family (AUTO) keeps only the IPv6 answers when there are any, so
          // `localhost` was ::1 while Chancery listens on IPv4 (0.0.0.0 by default); V4_PREFERRED
          // takes IPv4 answers first, and IPv6 for a name that has no IPv4 address.
          ...(isIP(host) === 0 ? { type: 'STRICT_DNS', dns_lookup_family: 'V4_PREFERRED' } : { type: 'STATIC' }),
          connect_timeout: '1s',
          typed_extension_protocol_options: {
            'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
              '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
              explicit_http_config: { http2_protocol_options: { connection_keepalive: HTTP2_KEEPALIVE } },
            },
          },
          upstream_connection_options: { tcp_keepalive: TCP_KEEPALIVE },
          ...(options.caFile !== undefined && { transport_socket: upstreamTls(host, options.caFile) }),
          load_assignment: {
            cluster_name: XDS_CLUSTER,
            endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: host, port_value: xds.port } } } }] }],
          },
        },
      ],
    },
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: options.adminPort } } },
  };
}

/**
 * Envoy's TLS to Chancery: the server's certificate must chain to `caFile` and name the host
 * dialled (Envoy checks no name unless told to), with SNI for a DNS name.
 */
function upstreamTls(host: string, caFile: string): object {
  const dns = isIP(host) === 0;
  return {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
      ...(dns && { sni: host }),
      common_tls_context: {
        alpn_protocols: ['h2'],
        validation_context: {
          trusted_ca: { filename: caFile },
          match_typed_subject_alt_names: [{ san_type: dns ? 'DNS' : 'IP_ADDRESS', matcher: { exact: host } }],
        },
      },
    },
  };
}

/**
 * How a proxyless gRPC client dials Chancery: `insecure`, or `google_default`: TLS trusting
 * `GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`, with a JWT the client signs on every stream with the
 * service account in `GOOGLE_APPLICATION_CREDENTIALS` (docs/security.md, "Securing Chancery").
 */
export type GrpcChannelCredentials = 'insecure' | 'google_default';

export interface GrpcBootstrapOptions {
  /** Where the gRPC client dials Chancery (or the balancer in front of it). */
  readonly xds: HostPort;
  readonly credentials: GrpcChannelCredentials;
  /** The directory `chancery agent` keeps the node's mTLS files in, on the client's host. */
  readonly certificates?: string;
}

/** The certificate provider instance gRPC's TLS contexts name (gRFC A29): the files of `chancery agent`. */
export const CERTIFICATE_PROVIDER = 'chancery';

/**
 * How often gRPC reads the agent's files again: required by grpc-js, and short beside any
 * certificate's renewal window (a third of its life, at least 10 s for the shortest, 30 s).
 */
const PROVIDER_REFRESH = '5s';

/** The listener name an xDS-enabled gRPC server asks for (gRFC A36): its address and port follow. */
export const SERVER_LISTENER_TEMPLATE = 'grpc/server?xds.resource.listening_address=%s';

/**
 * The JSON a proxyless gRPC client reads from `GRPC_XDS_BOOTSTRAP` (gRFC A27): one xDS server
 * speaking v3, and the node, whose `locality` grpc-js-xds requires. gRPC clients speak SotW only.
 */
export function grpcBootstrap(dataplane: Valid<Dataplane>, options: GrpcBootstrapOptions): object {
  return {
    xds_servers: [{ server_uri: formatHostPort(options.xds), channel_creds: [{ type: options.credentials }], server_features: ['xds_v3'] }],
    node: {
      id: nodeIdOf(dataplane.mesh, dataplane.name),
      cluster: clusterOf(dataplane),
      // The locality Chancery gives every endpoint of the mesh (service-resources.ts).
      locality: { region: dataplane.mesh, zone: 'default' },
    },
    ...(options.certificates !== undefined && {
      // gRPC reads certificates from files, never by SDS (A29); the agent swaps all three at once.
      certificate_providers: {
        [CERTIFICATE_PROVIDER]: {
          plugin_name: 'file_watcher',
          config: {
            certificate_file: joinPath(options.certificates, 'cert-chain.pem'),
            private_key_file: joinPath(options.certificates, 'key.pem'),
            ca_certificate_file: joinPath(options.certificates, 'root-cert.pem'),
            refresh_interval: PROVIDER_REFRESH,
          },
        },
      },
      server_listener_resource_name_template: SERVER_LISTENER_TEMPLATE,
    }),
  };
}

/** A path on the client's host: joined with `/`, as it is read there, whatever this host is. */
function joinPath(dir: string, file: string): string {
  return `${dir.replace(/\/+$/, '')}/${file}`;
}

/** Envoy's `node.cluster`: the service the dataplane serves, or its own name when it serves none. */
function clusterOf(dataplane: Valid<Dataplane>): string {
  return dataplane.networking.inbound[0]?.tags.service ?? dataplane.name;
}
