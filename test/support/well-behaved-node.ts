import { CLUSTER, LISTENER } from '../../src/xds/type-urls.js';
import { AdsStream } from './ads-client.js';

export interface ServedConfiguration {
  readonly clusters: { readonly version: string; readonly names: readonly string[] };
  readonly listeners: { readonly version: string; readonly names: readonly string[] };
}

/**
 * What a well-behaved Envoy is served on a new stream, as it asks (wildcard CDS, ACK, wildcard
 * LDS): the fuzz tests compare it before and after throwing hostile input at the server.
 */
export async function servedConfiguration(address: string, node: string): Promise<ServedConfiguration> {
  const stream = AdsStream.open(address);
  try {
    stream.send({ typeUrl: CLUSTER, nodeId: node });
    const clusters = await stream.nextResponse();
    stream.ack(clusters);
    stream.send({ typeUrl: LISTENER });
    const listeners = await stream.nextResponse();
    const namesOf = (resources: readonly Record<string, unknown>[]) => resources.map((resource) => String(resource.name));
    return {
      clusters: { version: clusters.versionInfo, names: namesOf(clusters.resources) },
      listeners: { version: listeners.versionInfo, names: namesOf(listeners.resources) },
    };
  } finally {
    stream.close();
  }
}
