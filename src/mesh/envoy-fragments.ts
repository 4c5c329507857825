import { protoDuration } from '../policies/index.js';
import { anyOf } from '../xds/index.js';

/**
 * Pieces of Envoy configuration that several generated resources share, in protobufjs
 * object form (enum names). An embedded `Any` is `anyOf`'s (src/xds/encode.ts), encoded beforehand.
 */

export const TCP_PROXY = 'envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy';
export const HTTP_CONNECTION_MANAGER =
  'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
export const ROUTER = 'envoy.extensions.filters.http.router.v3.Router';
export const HTTP_PROTOCOL_OPTIONS = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';

/**
 * Where a Listener's routes or a Cluster's endpoints come from: the same ADS stream, v3. gRPC
 * accepts only `ads` or `self` here (grpc-js-xds NACKs "rds.config_source.ads and
 * rds.config_source.self both unset").
 */
export const ADS_CONFIG_SOURCE = Object.freeze({ ads: {}, resource_api_version: 'V3' });

export const CONNECT_TIMEOUT = Object.freeze({ seconds: 5 });

export function socketAddress(address: string, port: number): object {
  return { socket_address: { address, port_value: port } };
}

/**
 * Envoy reserves `:` in stat names for tag extraction, and names like `localhost:9001` contain
 * one; Kuma uses the same substitution.
 */
export function statPrefix(name: string): string {
  return name.replaceAll(':', '_');
}

/**
 * Tries per outbound connection: an endpoint whose sidecar is not listening yet (just added)
 * or any more (just removed) costs a retry on the next host, not a failed connection.
 */
const OUTBOUND_CONNECT_ATTEMPTS = 3;

/** A TCP proxy to `cluster`: an outbound one retries the next host, and keeps the idle timeout a policy sets. */
export function tcpProxyFilter(cluster: string, direction: 'INBOUND' | 'OUTBOUND', idleTimeout?: string): object {
  return {
    name: 'envoy.filters.network.tcp_proxy',
    typed_config: anyOf(TCP_PROXY, {
      stat_prefix: statPrefix(cluster),
      cluster,
      ...(direction === 'OUTBOUND' && { max_connect_attempts: { value: OUTBOUND_CONNECT_ATTEMPTS } }),
      ...(idleTimeout !== undefined && { idle_timeout: protoDuration(idleTimeout) }),
    }),
  };
}
