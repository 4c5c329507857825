import { register } from '@grpc/grpc-js-xds';
import { EchoClient } from './echo-backend.js';

/**
 * grpc-js-xds reads its process-wide bootstrap once and caches it; this channel option gives
 * one channel its own bootstrap, and with it its own XdsClient and ADS stream
 * (toolchain-notes §4.1), so tests in one process do not share xDS state.
 */
const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';

let registered = false;

/** Registers the `xds:` resolver and the xDS LB policies with grpc-js, once per process. */
export function registerXds(): void {
  if (registered) return;
  register();
  registered = true;
}

export interface XdsClientOptions {
  /** The service to dial: the channel target is `xds:///<service>`. */
  readonly service: string;
  /** `host:port` of the xDS server (Chancery, or a proxy in front of it). */
  readonly xdsServer: string;
  /** `<mesh>.<dataplane name>`: Chancery serves only nodes that name a Dataplane. */
  readonly nodeId: string;
  /** The node's zone; grpc-js-xds requires `node.locality`, and `{}` is enough. */
  readonly zone?: string;
}

/** A client started from a bootstrap of its own (`chancery bootstrap grpc` prints one). */
export interface BootstrappedClientOptions {
  readonly service: string;
  /** The bootstrap JSON, as `GRPC_XDS_BOOTSTRAP` would hold it. */
  readonly bootstrap: string;
}

/** The bootstrap a proxyless gRPC client would read from `GRPC_XDS_BOOTSTRAP` (toolchain-notes §4.2). */
export function bootstrapFor({ xdsServer, nodeId, zone }: Omit<XdsClientOptions, 'service'>): object {
  return {
    xds_servers: [{ server_uri: xdsServer, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    node: { id: nodeId, cluster: 'chancery-test', locality: zone === undefined ? {} : { zone } },
  };
}

/**
 * An echo client on a real `@grpc/grpc-js-xds` channel to `xds:///<service>`: it learns
 * listeners, routes, clusters and endpoints from the xDS server over ADS, and sends its
 * calls straight to the backends that configuration names.
 */
export function createXdsEchoClient(options: XdsClientOptions | BootstrappedClientOptions): EchoClient {
  registerXds();
  const bootstrap = 'bootstrap' in options ? options.bootstrap : JSON.stringify(bootstrapFor(options));
  return new EchoClient(`xds:///${options.service}`, { [BOOTSTRAP_OPTION]: bootstrap });
}
