import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { lookupService } from './protos.js';

/**
 * A grpc-js service definition for an Envoy service, with serializers given by the caller:
 * Chancery decodes requests itself (`decoders`, by request message name; any other request
 * arrives as its bytes) and writes responses as pre-encoded bytes.
 */
export function serviceDefinition(
  serviceName: string,
  decoders: Readonly<Record<string, (bytes: Buffer) => unknown>> = {},
): ServiceDefinition {
  const service = lookupService(serviceName);
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methodsArray) {
    method.resolve();
    const decode = decoders[method.resolvedRequestType?.name ?? ''];
    definition[method.name] = {
      path: `/${serviceName}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: (value: unknown) => Buffer.from(value as Uint8Array),
      requestDeserialize: (bytes: Buffer) => (decode === undefined ? bytes : decode(bytes)),
      responseSerialize: (value: unknown) => toBuffer(value as Uint8Array),
      responseDeserialize: (bytes: Buffer) => bytes,
      originalName: method.name,
    };
  }
  return definition as ServiceDefinition;
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export const ADS_SERVICE = 'envoy.service.discovery.v3.AggregatedDiscoveryService';

/** Which configuration each node holds (CSDS), served beside ADS. */
export const CSDS_SERVICE = 'envoy.service.status.v3.ClientStatusDiscoveryService';

/** The per-type services: Chancery serves xDS over ADS only, and says so. */
export const PER_TYPE_SERVICES = [
  'envoy.service.listener.v3.ListenerDiscoveryService',
  'envoy.service.cluster.v3.ClusterDiscoveryService',
  'envoy.service.route.v3.RouteDiscoveryService',
  'envoy.service.endpoint.v3.EndpointDiscoveryService',
] as const;
