import { describe, expect, it } from 'vitest';
import { encodeResource } from '../../src/xds/encode.js';
import { ResourceSet } from '../../src/xds/resource-set.js';
import { MissingReferenceError, sealSnapshot, type SealResult } from '../../src/xds/snapshot.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET } from '../../src/xds/type-urls.js';

const assignment = (service: string, address?: string) =>
  encodeResource(ENDPOINT, service, {
    cluster_name: service,
    endpoints: address ? [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address, port_value: 8080 } } } }] }] : [],
  });

// A node's own cluster, reading its endpoints from EDS under the service's name.
const own = new ResourceSet([
  encodeResource(CLUSTER, 'outbound-svc-a', { name: 'outbound-svc-a', type: 'EDS', eds_cluster_config: { service_name: 'svc-a', eds_config: { ads: {} } } }, ['svc-a']),
]);

function seal(revision: number, endpoints: ResourceSet): SealResult {
  return sealSnapshot({
    node: 'default.web-1',
    revision,
    types: {
      [CLUSTER]: { wildcard: own, named: [] },
      [ENDPOINT]: { wildcard: ResourceSet.empty, named: [endpoints] },
      [LISTENER]: { wildcard: ResourceSet.empty, named: [] },
      [ROUTE]: { wildcard: ResourceSet.empty, named: [] },
      [SECRET]: { wildcard: ResourceSet.empty, named: [] },
    },
  });
}

describe('I5 for a node’s own resources, sealed again at every change of what they point into', () => {
  it('seals while the endpoints change and their names stay, and refuses once the name it points to is gone', () => {
    expect(seal(1, new ResourceSet([assignment('svc-a')])).ok).toBe(true);
    // Same names, other contents: the endpoint change every node of a fleet gets.
    expect(seal(2, new ResourceSet([assignment('svc-a', '10.0.0.1')])).ok).toBe(true);
    const gone = seal(3, new ResourceSet([assignment('svc-b', '10.0.0.1')]));
    expect(gone.ok).toBe(false);
    const error = !gone.ok && gone.error;
    expect(error).toBeInstanceOf(MissingReferenceError);
    expect(error instanceof MissingReferenceError && error.missing).toEqual(['svc-a']);
    // And once it is back, it seals again.
    expect(seal(4, new ResourceSet([assignment('svc-a', '10.0.0.2'), assignment('svc-b')])).ok).toBe(true);
  });
});
