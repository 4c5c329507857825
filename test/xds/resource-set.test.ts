import { describe, expect, it } from 'vitest';
import { encodeResource } from '../../src/xds/encode.js';
import { ResourceSet } from '../../src/xds/resource-set.js';
import { sealSnapshot } from '../../src/xds/snapshot.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET } from '../../src/xds/type-urls.js';

const cluster = (name: string) => encodeResource(CLUSTER, name, { name, type: 'STATIC' });
const names = (count: number) => Array.from({ length: count }, (_, index) => `cluster-${String(index).padStart(2, '0')}`);

// A node's own sets hold one or two resources and are scanned; a mesh's shared sets are looked up by name.
describe.each([
  ['a node’s own set, scanned', 2],
  ['a shared set, by name', 40],
])('ResourceSet: %s', (_, size) => {
  const resources = names(size).reverse().map(cluster);
  const set = new ResourceSet(resources);

  it('finds every resource by its name, and nothing by any other', () => {
    for (const resource of resources) expect(set.get(resource.name)).toBe(resource);
    expect(set.get('cluster-missing')).toBeUndefined();
    expect(set.get('')).toBeUndefined();
  });

  it('lists its resources sorted by name, and sizes them', () => {
    expect(set.list.map((resource) => resource.name)).toEqual(names(size));
    expect(set.size).toBe(size);
  });

  it('refuses a name twice, wherever the second one is', () => {
    const twice = [...resources, cluster(names(size)[size - 1]!)];
    expect(() => new ResourceSet(twice)).toThrow(`duplicate resource name ${names(size)[size - 1]} (${CLUSTER})`);
    expect(() => new ResourceSet([cluster('cluster-00'), ...resources])).toThrow('duplicate resource name cluster-00');
  });
});

describe('TypeSnapshot', () => {
  const own = new ResourceSet([cluster('own')]);
  const shared = Object.freeze([new ResourceSet(names(3).map(cluster))]);
  const seal = (node: string, named: readonly ResourceSet[]) => {
    const result = sealSnapshot({
      node,
      revision: 1,
      types: {
        [CLUSTER]: { wildcard: own, named },
        [ENDPOINT]: { wildcard: ResourceSet.empty, named: [] },
        [LISTENER]: { wildcard: ResourceSet.empty, named: [] },
        [ROUTE]: { wildcard: ResourceSet.empty, named: [] },
        [SECRET]: { wildcard: ResourceSet.empty, named: [] },
      },
    });
    if (!result.ok) throw result.error;
    return result.snapshot.types[CLUSTER];
  };

  it('reads a name from the node’s own set before the shared ones, and counts a resource once', () => {
    const type = seal('default.a', shared);
    expect(type.get('own')).toBe(own.list[0]);
    expect(type.get('cluster-01')).toBe(shared[0]!.list[1]);
    expect(type.get('cluster-09')).toBeUndefined();
    expect(type.size).toBe(4);
  });

  it('holds a frozen shared list as it is, and copies one that could still change', () => {
    expect(seal('default.b', shared).named).toBe(shared);
    const open = [...shared];
    const copied = seal('default.c', open).named;
    expect(copied).not.toBe(open);
    expect(copied).toEqual(open);
    expect(Object.isFrozen(copied)).toBe(true);
  });
});
