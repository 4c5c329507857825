import { describe, expect, it } from 'vitest';
import { generate } from '../../src/mesh/generator.js';
import type { MeshState, Projection } from '../../src/store/types.js';
import { encodeCount } from '../../src/xds/encode.js';
import type { Snapshot } from '../../src/xds/snapshot.js';
import { CLUSTER, ENDPOINT, LISTENER, PUSH_ORDER, ROUTE } from '../../src/xds/type-urls.js';
import { meshState, projection, storedDataplane, storedMesh, withDataplane } from './fixtures.js';
import { versionSplit, withPolicies } from './policy-fixtures.js';

const SERVICES = 10;
const NODES = 100;

/** NODES Envoy sidecars, each serving service s<i % SERVICES> and calling the next service. */
function sidecarMesh(): MeshState {
  return meshState(
    storedMesh(),
    Array.from({ length: NODES }, (_, i) =>
      storedDataplane({
        name: `dp-${i}`,
        address: `10.0.${Math.floor(i / 250)}.${i % 250}`,
        inbound: [{ port: 10001, servicePort: 9001, tags: { service: `s${i % SERVICES}` } }],
        outbound: [{ port: 20001, service: `s${(i + 1) % SERVICES}` }],
      }),
    ),
  );
}

function generateAll(at: Projection, nodes: readonly string[]): Map<string, Snapshot> {
  return new Map(
    nodes.map((node) => {
      const result = generate(node, at);
      if (!result.ok) throw result.error;
      return [node, result.snapshot];
    }),
  );
}

const nodes = Array.from({ length: NODES }, (_, i) => `default.dp-${i}`);

/** dp-3 (service s3) moves its inbound to another port: one endpoint of s3 changes. */
function moveOneEndpoint(state: MeshState): MeshState {
  return withDataplane(
    state,
    storedDataplane(
      {
        name: 'dp-3',
        address: '10.0.0.3',
        inbound: [{ port: 10002, servicePort: 9001, tags: { service: 's3' } }],
        outbound: [{ port: 20001, service: 's4' }],
      },
      2,
    ),
  );
}

describe('generation reuses what did not change', () => {
  it('does no encoding for a node whose Dataplane and mesh are unchanged, even at a newer revision', () => {
    const state = sidecarMesh();
    generateAll(projection(1, state), nodes);
    const before = encodeCount();
    const again = generateAll(projection(2, state), nodes);
    expect(encodeCount()).toBe(before);
    expect(again.get('default.dp-0')?.revision).toBe(2);
  });

  it('encodes only the changed service’s ClusterLoadAssignment for every other node of the mesh after one endpoint moves', () => {
    const state = sidecarMesh();
    generateAll(projection(1, state), nodes);
    const before = encodeCount();
    generateAll(projection(2, moveOneEndpoint(state)), nodes.filter((node) => node !== 'default.dp-3'));
    expect(encodeCount() - before).toBe(1);
  });

  it('keeps the resource objects of every other service identical after an unrelated change', () => {
    const state = sidecarMesh();
    const old = generateAll(projection(1, state), nodes).get('default.dp-0');
    const now = generateAll(projection(2, moveOneEndpoint(state)), ['default.dp-0']).get('default.dp-0');
    if (old === undefined || now === undefined) throw new Error('expected snapshots');
    for (const typeUrl of PUSH_ORDER) {
      for (let i = 0; i < SERVICES; i++) {
        const name = `s${i}`;
        const changed = typeUrl === ENDPOINT && name === 's3';
        if (changed) expect(now.types[typeUrl].get(name)).not.toBe(old.types[typeUrl].get(name));
        else expect(now.types[typeUrl].get(name)).toBe(old.types[typeUrl].get(name));
      }
    }
    for (const typeUrl of [LISTENER, CLUSTER]) expect(now.types[typeUrl].wildcard).toBe(old.types[typeUrl].wildcard);
  });

  it('keeps the shared Listener, RouteConfiguration and Cluster sets while the set of services is unchanged', () => {
    const state = sidecarMesh();
    const old = generateAll(projection(1, state), ['default.dp-0']).get('default.dp-0');
    const now = generateAll(projection(2, moveOneEndpoint(state)), ['default.dp-0']).get('default.dp-0');
    for (const typeUrl of [LISTENER, ROUTE, CLUSTER]) {
      expect(now?.types[typeUrl].named[0]).toBe(old?.types[typeUrl].named[0]);
      expect(now?.types[typeUrl].version).toBe(old?.types[typeUrl].version);
    }
    expect(now?.types[ENDPOINT].version).not.toBe(old?.types[ENDPOINT].version);
  });

  it('encodes a policy change once for all the nodes it selects, not once a node', () => {
    // NODES Envoys calling the HTTP service echo (two versions), under a Mesh-wide MeshTimeout.
    const timeout = (requestTimeout: string) => ({
      type: 'MeshTimeout',
      mesh: 'default',
      name: 'echo-timeout',
      spec: { targetRef: { kind: 'Mesh' }, to: [{ targetRef: { kind: 'MeshService', name: 'echo' }, default: { http: { requestTimeout } } }] },
    });
    const callers = Array.from({ length: NODES }, (_, i) =>
      storedDataplane({ name: `web-${i}`, address: `10.1.0.${i}`, inbound: [{ port: 10001, tags: { service: 'web' } }], outbound: [{ port: 20001, service: 'echo' }] }),
    );
    const echo = ['v1', 'v2'].map((version, i) => storedDataplane({ name: `echo-${version}`, address: `10.2.0.${i}`, inbound: [{ port: 8080, tags: { service: 'echo', version, protocol: 'http' } }] }));
    const state = meshState(storedMesh(), [...callers, ...echo]);
    const web = callers.map(({ resource }) => `default.${resource.name}`);
    generateAll(projection(1, withPolicies(state, [timeout('5s')])), web);
    const before = encodeCount();
    const after = generateAll(projection(2, withPolicies(state, [timeout('10s')])), web);
    // The Envoys' outbound listener, RouteConfiguration and echo cluster, and the mesh's shared
    // RouteConfiguration and cluster of echo for proxyless gRPC, each once; no node's inbound again.
    expect(encodeCount() - before).toBe(5);
    const route = after.get('default.web-0')!.types[ROUTE].wildcard.get('outbound:127.0.0.1:20001');
    expect(route).toBeDefined();
    for (const snapshot of after.values()) expect(snapshot.types[ROUTE].wildcard.get('outbound:127.0.0.1:20001')).toBe(route);
    // Their route and cluster sets are equal, so one object each: sealed once for all of them.
    const first = after.get('default.web-0')!;
    for (const snapshot of after.values()) for (const typeUrl of [ROUTE, CLUSTER]) expect(snapshot.types[typeUrl].wildcard).toBe(first.types[typeUrl].wildcard);
  });

  it('keeps each node’s listener set through a route’s new weights, and makes the nodes’ new route set once for all of them', () => {
    const callers = Array.from({ length: NODES }, (_, i) =>
      storedDataplane({ name: `web-${i}`, address: `10.1.0.${i}`, inbound: [{ port: 10001, tags: { service: 'web' } }], outbound: [{ port: 20001, service: 'echo' }] }),
    );
    const echo = ['v1', 'v2'].map((version, i) => storedDataplane({ name: `echo-${version}`, address: `10.2.0.${i}`, inbound: [{ port: 8080, tags: { service: 'echo', version, protocol: 'http' } }] }));
    const state = meshState(storedMesh(), [...callers, ...echo]);
    const web = callers.map(({ resource }) => `default.${resource.name}`);
    const before = generateAll(projection(1, withPolicies(state, [versionSplit('canary', 'echo', [90, 10])])), web);
    const after = generateAll(projection(2, withPolicies(state, [versionSplit('canary', 'echo', [50, 50])])), web);
    const routes = after.get('default.web-0')!.types[ROUTE].wildcard;
    expect(routes.version).not.toBe(before.get('default.web-0')!.types[ROUTE].wildcard.version);
    for (const node of web) {
      const [was, now] = [before.get(node)!, after.get(node)!];
      // Its own listeners (its inbound with them) came out the same: the set it had, not an equal new one.
      expect(now.types[LISTENER].wildcard).toBe(was.types[LISTENER].wildcard);
      expect(now.types[CLUSTER].version).toBe(was.types[CLUSTER].version);
      expect(now.types[ROUTE].wildcard).toBe(routes);
    }
    // Once echo speaks TCP, its outbound is a TCP proxy: every node's listeners are made anew.
    const tcp = echo.map(({ resource }, i) => storedDataplane({ name: resource.name, address: `10.2.0.${i}`, inbound: [{ port: 8080, tags: { service: 'echo', version: `v${i + 1}`, protocol: 'tcp' } }] }, 3));
    const asTcp = generateAll(projection(3, withPolicies(meshState(storedMesh(), [...callers, ...tcp]), [versionSplit('canary', 'echo', [50, 50])])), web);
    for (const node of web) expect(asTcp.get(node)!.types[LISTENER].wildcard.version).not.toBe(after.get(node)!.types[LISTENER].wildcard.version);
  });

  it('encodes one empty ClusterLoadAssignment when a service loses its last endpoint, however many nodes call it', () => {
    const state = sidecarMesh();
    generateAll(projection(1, state), nodes);
    // s0 is served by dp-0, dp-10, … dp-90; they all stop serving it.
    let without = state;
    for (let i = 0; i < NODES; i += SERVICES) {
      without = withDataplane(without, storedDataplane({ name: `dp-${i}`, address: '10.0.9.9', outbound: [{ port: 20001, service: 's1' }] }, 2));
    }
    const callers = nodes.filter((_, i) => (i + 1) % SERVICES === 0);
    const before = encodeCount();
    const snapshots = generateAll(projection(2, without), callers);
    expect(encodeCount() - before).toBe(1);
    for (const snapshot of snapshots.values()) expect(snapshot.types[ENDPOINT].wildcard.get('s0')).toBeDefined();
  });

  it('builds each mesh state’s services from the last state built, whichever it was, as a build from nothing would', () => {
    const base = sidecarMesh();
    const serving = (name: string, address: string, ...services: string[]) =>
      storedDataplane({ name, address, inbound: services.map((service, i) => ({ port: 10001 + i, servicePort: 9001, tags: { service, version: `v${i}` } })), outbound: [{ port: 20001, service: 's1' }] }, 2);
    const without = (state: MeshState, name: string): MeshState => ({ ...state, dataplanes: new Map([...state.dataplanes].filter(([key]) => key !== name)) });
    const added = withDataplane(base, serving('dp-new', '10.0.8.1', 's3', 'brand-new'));
    const moved = withDataplane(without(added, 'dp-5'), serving('dp-7', '10.0.0.7', 's1'));
    // A preview's state is built from the live one; the next live state is then built from the preview's.
    const preview = without(without(moved, 'dp-new'), 'dp-17');
    const emptied = [...moved.dataplanes.keys()].filter((name) => /^dp-\d*3$/.test(name)).reduce(without, moved);
    const sequence = [base, added, moved, preview, emptied, base];
    const liveNodes = (state: MeshState) => [...state.dataplanes.keys()].map((name) => `default.${name}`);
    const versions = (snapshots: Map<string, Snapshot>) =>
      [...snapshots].map(([node, snapshot]) => [node, PUSH_ORDER.map((typeUrl) => [snapshot.types[typeUrl].version, snapshot.types[typeUrl].named.map((set) => set.version)])]);
    sequence.forEach((state, i) => {
      const built = generateAll(projection(i + 1, state), liveNodes(state));
      // Another Mesh object and dataplanes map: a memo of their own, so everything is built from nothing.
      const fresh = generateAll(projection(i + 1, { ...state, mesh: storedMesh(), dataplanes: new Map(state.dataplanes) }), liveNodes(state));
      expect(versions(built)).toEqual(versions(fresh));
    });
  });
});
