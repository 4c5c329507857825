import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import protobuf from 'protobufjs';

// Envoy's protos are read from @grpc/grpc-js-xds's bundled deps/; this repository keeps no copy.
const require = createRequire(import.meta.url);
const depsDir = path.join(path.dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
const includeDirs = [
  ...['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((dir) => path.join(depsDir, dir)),
  // google/protobuf/descriptor.proto, which the validate and udpa annotations import.
  path.dirname(require.resolve('protobufjs/package.json')),
];

const files = [
  'envoy/service/discovery/v3/ads.proto',
  'envoy/service/listener/v3/lds.proto',
  'envoy/service/cluster/v3/cds.proto',
  'envoy/service/route/v3/rds.proto',
  'envoy/service/endpoint/v3/eds.proto',
  'envoy/service/status/v3/csds.proto',
  'envoy/config/listener/v3/listener.proto',
  'envoy/config/route/v3/route.proto',
  'envoy/config/cluster/v3/cluster.proto',
  'envoy/config/endpoint/v3/endpoint.proto',
  'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
  'envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.proto',
  'envoy/extensions/filters/http/router/v3/router.proto',
  // Mesh mTLS: SDS Secrets, the TLS transport sockets that name them, and the inspector that tells TLS from plaintext.
  'envoy/extensions/transport_sockets/tls/v3/secret.proto',
  'envoy/extensions/transport_sockets/tls/v3/tls.proto',
  'envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto',
  // An HTTP/2 or gRPC service's Envoy cluster speaks HTTP/2 upstream (src/mesh/outbound-resources.ts).
  'envoy/extensions/upstreams/http/v3/http_protocol_options.proto',
];

let root: protobuf.Root | undefined;

/** The protobufjs root holding every Envoy message Chancery reads or writes; loaded once. */
export function envoyRoot(): protobuf.Root {
  if (root) return root;
  const loaded = new protobuf.Root();
  loaded.resolvePath = (_origin, target) =>
    includeDirs.map((dir) => path.join(dir, target)).find((candidate) => existsSync(candidate)) ?? target;
  loaded.loadSync(files, { keepCase: true });
  loaded.resolveAll();
  root = loaded;
  return root;
}

// protobufjs walks its namespaces on every lookup; a node's first resources look up their types each.
const types = new Map<string, protobuf.Type>();

export function lookupType(name: string): protobuf.Type {
  let type = types.get(name);
  if (type === undefined) {
    type = envoyRoot().lookupType(name);
    types.set(name, type);
  }
  return type;
}

export function lookupService(name: string): protobuf.Service {
  return envoyRoot().lookupService(name);
}
