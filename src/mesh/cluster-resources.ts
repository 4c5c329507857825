import { CLUSTER, encodeResource, type EncodedResource } from '../xds/index.js';
import { ADS_CONFIG_SOURCE, CONNECT_TIMEOUT } from './envoy-fragments.js';

/** What a cluster carries with no policy: Envoy's connect timeout, 5 s (MeshTimeout's default). */
export const DEFAULT_CLUSTER_FIELDS: Readonly<Record<string, unknown>> = Object.freeze({ connect_timeout: CONNECT_TIMEOUT });

/**
 * An EDS cluster named `name`, fed over ADS by the ClusterLoadAssignment of the same name, with
 * `fields` as a cluster plan renders them (connect timeout, circuit breakers, outlier detection,
 * HTTP/2). Encoding interns equal bytes as one object, so equal plans make one cluster.
 */
export function clusterResource(name: string, fields: Readonly<Record<string, unknown>>): EncodedResource {
  return encodeResource(
    CLUSTER,
    name,
    {
      name,
      type: 'EDS',
      eds_cluster_config: { service_name: name, eds_config: ADS_CONFIG_SOURCE },
      lb_policy: 'ROUND_ROBIN',
      ...fields,
    },
    [name],
  );
}
