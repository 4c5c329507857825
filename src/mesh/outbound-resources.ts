import { anyOf, CLUSTER, encodeResource, LISTENER, ROUTE, type EncodedResource } from '../xds/index.js';
import { ADS_CONFIG_SOURCE, HTTP_CONNECTION_MANAGER, HTTP_PROTOCOL_OPTIONS, ROUTER, socketAddress, statPrefix } from './envoy-fragments.js';
import { outboundListenerName, serviceResourceName } from './names.js';
import type { Protocol } from './protocols.js';
import { edsCluster } from './service-resources.js';

/** What an Envoy outbound to an HTTP service is made of: its listener, its routes and the clusters they name. */
export interface HttpOutbound {
  readonly listener: EncodedResource;
  readonly route: EncodedResource;
  readonly clusters: readonly EncodedResource[];
}

/**
 * An Envoy outbound to a service speaking HTTP, HTTP/2 or gRPC: an HTTP connection manager
 * whose routes come over RDS, from a RouteConfiguration named after the listener (one per
 * outbound), so HTTP policies can shape them. The listener names its RouteConfiguration, and
 * the snapshot must hold it (I5).
 */
export function httpOutbound(port: number, service: string, protocol: Exclude<Protocol, 'tcp'>): HttpOutbound {
  const name = outboundListenerName(port);
  const cluster = serviceCluster(service, protocol);
  return {
    listener: httpListener(name, port, service),
    route: encodeResource(ROUTE, name, {
      name,
      virtual_hosts: [{ name: service, domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: cluster.name } }] }],
    }),
    clusters: [cluster],
  };
}

function httpListener(name: string, port: number, service: string): EncodedResource {
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
              }),
            },
          ],
        },
      ],
    },
    [name],
  );
}

/**
 * The EDS cluster of a service as an Envoy outbound calls it: for HTTP/2 and gRPC, speaking
 * HTTP/2 upstream (Envoy's default is HTTP/1.1, which a gRPC server refuses); otherwise the
 * very cluster proxyless clients get.
 */
function serviceCluster(service: string, protocol: Exclude<Protocol, 'tcp'>): EncodedResource {
  if (protocol === 'http') return edsCluster(service);
  const name = serviceResourceName(service);
  return encodeResource(
    CLUSTER,
    name,
    {
      name,
      type: 'EDS',
      eds_cluster_config: { service_name: name, eds_config: ADS_CONFIG_SOURCE },
      lb_policy: 'ROUND_ROBIN',
      connect_timeout: { seconds: 5 },
      typed_extension_protocol_options: {
        [`envoy.extensions.upstreams.http.v3.HttpProtocolOptions`]: anyOf(HTTP_PROTOCOL_OPTIONS, {
          explicit_http_config: { http2_protocol_options: {} },
        }),
      },
    },
    [name],
  );
}
