import { CLUSTER, encodeResource, type EncodedResource } from '../xds/index.js';
import type { ClusterPlan } from './cluster-plan.js';
import { ADS_CONFIG_SOURCE } from './envoy-fragments.js';

/**
 * An EDS cluster named `name`, fed over ADS by the ClusterLoadAssignment of the same name, with
 * what its plan says (connect timeout, circuit breakers, outlier detection, HTTP/2). Without
 * policies it is the very cluster `edsCluster` makes: encoding interns equal bytes as one object.
 */
export function clusterResource(name: string, plan: ClusterPlan): EncodedResource {
  return encodeResource(
    CLUSTER,
    name,
    {
      name,
      type: 'EDS',
      eds_cluster_config: { service_name: name, eds_config: ADS_CONFIG_SOURCE },
      lb_policy: 'ROUND_ROBIN',
      ...plan.fields,
    },
    [name],
  );
}
