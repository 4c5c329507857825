import { describe, expect, it } from 'vitest';
import { fleetFactsOf, NO_FACTS, warningsOf, type FleetFacts, type SessionFacts } from '../../src/changes/index.js';
import { validate, type Resource, type Valid } from '../../src/mesh/index.js';
import { applyEvents, asResourceVersion, asSeq, emptyProjection, type Projection, type ResourceEvent } from '../../src/store/index.js';
import { versionSplit } from '../mesh/policy-fixtures.js';

const at = '2030-01-01T00:00:00.000Z';
const by = { instance: 'test' };

function valid(input: object): Valid<Resource> {
  const result = validate(input);
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.resource;
}

const mesh = valid({ type: 'Mesh', name: 'default', dataplaneAuth: 'none' });
const serving = (name: string, service: string, port = 10001) => valid({ type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1', inbound: [{ port, tags: { service } }] } });
const calling = (name: string, service: string) => valid({ type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1', outbound: [{ port: 20001, service }] } });
const client = (name: string) => valid({ type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1' } });

/** A projection holding these resources, each written once. */
function holding(...resources: Valid<Resource>[]): Projection {
  // A Mesh given first stands for the default one.
  const all = resources[0]?.type === 'Mesh' ? resources : [mesh, ...resources];
  const events = all.map(
    (resource, i): ResourceEvent => ({
      seq: asSeq(i + 1),
      key: { type: resource.type, mesh: resource.type === 'Mesh' ? resource.name : 'default', name: resource.name },
      version: asResourceVersion(1),
      at,
      by,
      kind: 'upserted',
      resource,
    }),
  );
  return applyEvents(emptyProjection(), events);
}

/** `before` with the named dataplanes deleted and `resources` written, as one batch. */
function after(before: Projection, change: { readonly put?: Valid<Resource>[]; readonly remove?: string[] }): Projection {
  let seq = before.revision;
  const events: ResourceEvent[] = [
    ...(change.remove ?? []).map((name): ResourceEvent => ({ seq: asSeq(++seq), key: { type: 'Dataplane', mesh: 'default', name }, version: asResourceVersion(2), at, by, kind: 'deleted' })),
    ...(change.put ?? []).map((resource): ResourceEvent => ({ seq: asSeq(++seq), key: { type: resource.type, mesh: 'default', name: resource.name }, version: asResourceVersion(2), at, by, kind: 'upserted', resource })),
  ];
  return applyEvents(before, events);
}

/** echo with versions, and a MeshHTTPRoute sending `weights` of web's calls to echo's v1 and v2. */
const versioned = (name: string, version: string, port: number) =>
  valid({ type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1', inbound: [{ port, tags: { service: 'echo', version, protocol: 'http' } }] } });
const canary = (weights: readonly [number, number]) => valid(versionSplit('echo-canary', 'echo', weights));

const session = (node: string, state: string, instance = 'cp-1', names: readonly string[] = []): SessionFacts => ({
  node,
  state,
  instance,
  types: names.length === 0 ? {} : { LDS: { subscription: { wildcard: false, names } }, CDS: { subscription: { wildcard: false, names } } },
});

const kinds = (before: Projection, next: Projection, facts: FleetFacts = NO_FACTS) => warningsOf({ before, after: next, facts }).map((warning) => warning.kind);

describe('warnings: a service losing its last endpoint while nodes call it', () => {
  const fleet = holding(serving('echo-1', 'echo'), calling('web-1', 'echo'), calling('web-2', 'echo'));

  it('fires when the last endpoint goes while Envoys call the service, counting and naming them', () => {
    const [warning] = warningsOf({ before: fleet, after: after(fleet, { remove: ['echo-1'] }), facts: NO_FACTS });
    expect(warning).toEqual({
      kind: 'service-loses-last-endpoint',
      mesh: 'default',
      service: 'echo',
      callers: 2,
      nodes: ['default.web-1', 'default.web-2'],
      message: 'service echo in mesh default loses its last endpoint while 2 nodes call it (default.web-1, default.web-2): their calls will fail',
    });
  });

  it('fires when the last endpoint moves to another service too', () => {
    expect(kinds(fleet, after(fleet, { put: [serving('echo-1', 'other')] }))).toEqual(['service-loses-last-endpoint']);
  });

  it('counts a proxyless gRPC client subscribed to the service by name, on any instance', () => {
    const grpc = holding(serving('greeter-1', 'greeter'), client('client'));
    const facts = fleetFactsOf([session('default.client', 'serving', 'cp-2', ['greeter'])]);
    const [warning] = warningsOf({ before: grpc, after: after(grpc, { remove: ['greeter-1'] }), facts });
    expect(warning).toMatchObject({ kind: 'service-loses-last-endpoint', service: 'greeter', callers: 1, nodes: ['default.client'] });
  });

  it('does not fire while an endpoint is left, nor for a service no node calls, nor for a harmless write', () => {
    const two = holding(serving('echo-1', 'echo'), serving('echo-2', 'echo', 10002), calling('web-1', 'echo'), serving('lonely-1', 'lonely'));
    expect(kinds(two, after(two, { remove: ['echo-1'] }))).toEqual([]);
    expect(kinds(two, after(two, { remove: ['lonely-1'] }))).toEqual([]);
    expect(kinds(two, after(two, { put: [serving('echo-3', 'echo', 10003), calling('web-2', 'echo')] }))).toEqual([]);
  });
});

describe('warnings: a route share pointing at a subset with no endpoints', () => {
  const fleet = holding(versioned('echo-1', 'v1', 10001), versioned('echo-2', 'v2', 10002), calling('web-1', 'echo'), canary([90, 10]));

  it('fires when the last endpoint of a subset a route shares to goes, naming the route, the subset and its callers', () => {
    const [warning] = warningsOf({ before: fleet, after: after(fleet, { remove: ['echo-2'] }), facts: NO_FACTS });
    expect(warning).toEqual({
      kind: 'route-share-without-endpoints',
      mesh: 'default',
      route: 'echo-canary',
      service: 'echo',
      tags: { version: 'v2' },
      weight: 10,
      callers: 1,
      nodes: ['default.web-1'],
      message: "MeshHTTPRoute echo-canary in mesh default sends a share (weight 10) of echo's requests to subset echo:version=v2, which has no endpoint: for 1 node (default.web-1) it goes to echo instead",
    });
  });

  it('fires when a route is written pointing at a subset nobody serves', () => {
    const before = holding(versioned('echo-1', 'v1', 10001), calling('web-1', 'echo'));
    expect(kinds(before, after(before, { put: [canary([90, 10])] }))).toEqual(['route-share-without-endpoints']);
  });

  it('does not fire for a share already dangling, a share of weight 0, or a harmless write', () => {
    const dangling = holding(versioned('echo-1', 'v1', 10001), calling('web-1', 'echo'), canary([90, 10]));
    expect(kinds(dangling, after(dangling, { put: [calling('web-2', 'echo')] }))).toEqual([]);
    expect(kinds(fleet, after(fleet, { put: [canary([100, 0])] }))).toEqual([]);
    expect(kinds(fleet, after(fleet, { put: [canary([100, 0])], remove: ['echo-2'] }))).toEqual([]);
    expect(kinds(fleet, after(fleet, { put: [versioned('echo-3', 'v2', 10003)] }))).toEqual([]);
  });
});

describe('warnings: a mesh switching to strict mTLS while endpoints cannot accept TLS', () => {
  const meshIn = (mode: string) => valid({ type: 'Mesh', name: 'default', dataplaneAuth: 'none', mtls: { mode } });
  const status = (name: string, inbound: 'plaintext' | 'permissive' | 'strict') =>
    ({ type: 'DataplaneTls', mesh: 'default', name, issuer: 'ca-1', trusts: ['ca-1'], inbound }) as unknown as Valid<Resource>;
  const fleet = (statuses: Valid<Resource>[]) => holding(meshIn('permissive'), serving('echo-1', 'echo'), serving('echo-2', 'echo', 10002), calling('web-1', 'echo'), ...statuses);

  it('fires naming the endpoints that reported plaintext, or nothing, before the switch', () => {
    const before = fleet([status('echo-1', 'permissive'), status('echo-2', 'plaintext')]);
    expect(warningsOf({ before, after: after(before, { put: [meshIn('strict')] }), facts: NO_FACTS })).toEqual([
      {
        kind: 'strict-mtls-plaintext-endpoints',
        mesh: 'default',
        service: 'echo',
        dataplanes: ['echo-2'],
        count: 1,
        message: 'mesh default switches to strict mTLS while 1 endpoint of service echo (echo-2) has not reported an inbound accepting TLS: calls to them will fail; go through permissive first (docs/mtls.md)',
      },
    ]);
    const silent = fleet([status('echo-1', 'permissive')]);
    expect(warningsOf({ before: silent, after: after(silent, { put: [meshIn('strict')] }), facts: NO_FACTS })[0]).toMatchObject({ dataplanes: ['echo-2'] });
  });

  it('does not fire once every endpoint accepts TLS, for a Dataplane written with the switch, nor on the way to permissive', () => {
    const ready = fleet([status('echo-1', 'permissive'), status('echo-2', 'permissive')]);
    expect(kinds(ready, after(ready, { put: [meshIn('strict')] }))).toEqual([]);
    expect(kinds(ready, after(ready, { put: [meshIn('strict'), serving('echo-3', 'echo', 10003)] }))).toEqual([]);
    const plain = holding(meshIn('disabled'), serving('echo-1', 'echo'), calling('web-1', 'echo'));
    expect(kinds(plain, after(plain, { put: [meshIn('permissive')] }))).toEqual([]);
  });
});

describe('warnings: a Dataplane deleted while its node is connected', () => {
  const fleet = holding(serving('echo-1', 'echo'), serving('echo-2', 'echo', 10002));

  it('fires for a node holding a stream on any instance, naming the instances', () => {
    const facts = fleetFactsOf([session('default.echo-2', 'serving', 'cp-2'), session('default.echo-2', 'disconnected', 'cp-1')]);
    expect(warningsOf({ before: fleet, after: after(fleet, { remove: ['echo-2'] }), facts })).toEqual([
      {
        kind: 'connected-dataplane-deleted',
        mesh: 'default',
        dataplane: 'echo-2',
        node: 'default.echo-2',
        connectedTo: ['cp-2'],
        message: 'Dataplane echo-2 in mesh default is deleted while node default.echo-2 is connected (to cp-2): its stream is ended and it keeps the configuration it holds',
      },
    ]);
  });

  it('does not fire for a node whose session is disconnected or that has none, nor when the Dataplane is only changed', () => {
    const facts = fleetFactsOf([session('default.echo-2', 'disconnected'), session('default.echo-1', 'serving')]);
    expect(kinds(fleet, after(fleet, { remove: ['echo-2'] }), facts)).toEqual([]);
    expect(kinds(fleet, after(fleet, { put: [serving('echo-1', 'echo', 10009)] }), facts)).toEqual([]);
  });
});
