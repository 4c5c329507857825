import { IDENTITY_SECRET, outboundListenerName, subsetClusterName, trustSecretName } from '../../src/mesh/names.js';

/**
 * The meshes the benches serve: `nodes` Envoy dataplanes and `services` services, in one of two
 * shapes. Both have a service every node calls (the hub, `svc-00`), so a change to its
 * endpoints is one every node's configuration depends on.
 *
 * - The hub shape (`backends` absent): dataplane i serves service i mod `services` on one
 *   inbound and calls two services, its neighbour and the hub. At 10,000 nodes over 50
 *   services each service has 200 endpoints.
 * - The backends shape (`backends` set), the load go-control-plane was measured with in
 *   reference/performance-anchors.md: every node serves `web` and calls all `services`, each
 *   served by `backends` dataplanes without a proxy of their own.
 */
export interface MeshShape {
  readonly nodes: number;
  readonly services: number;
  readonly backends?: number;
  /** Default `plain`. */
  readonly variant?: MeshVariant;
}

/**
 * What the mesh asks of each node besides its clusters, endpoints and listeners:
 *
 * - `plain`: nothing; every service TCP.
 * - `policies`: every inbound speaks HTTP (so each Envoy outbound is an HTTP connection manager
 *   whose routes come over RDS) and carries a `version` tag (v1 and v2 alternate among a
 *   service's endpoints); per service a MeshHTTPRoute splitting 90/10 across the two versions'
 *   subsets, a MeshTimeout, a MeshRetry and a MeshCircuitBreaker.
 * - `strict`: the Mesh has strict mTLS: each node is issued a certificate, and its listeners
 *   and clusters name two SDS Secrets.
 */
export type MeshVariant = 'plain' | 'policies' | 'strict';

export const MESH_VARIANTS: readonly MeshVariant[] = ['plain', 'policies', 'strict'];

/** What a bench change rewrites: one more endpoint of the hub (every node's EDS moves), or with `policies` the hub's route weights (RDS moves). */
export type ChangeKind = 'endpoint' | 'policy';

export const MESH = 'default';
const INBOUND_PORT = 10001;
const FIRST_OUTBOUND_PORT = 20001;

export function serviceName(index: number): string {
  return `svc-${String(index).padStart(2, '0')}`;
}

/** The service every node calls. */
export const HUB = serviceName(0);

export function dataplaneName(index: number): string {
  return `dp-${String(index).padStart(5, '0')}`;
}

export function nodeId(index: number): string {
  return `${MESH}.${dataplaneName(index)}`;
}

/** A distinct address per dataplane: 10.1.0.0/16 onwards. */
function addressOf(index: number): string {
  return `10.${1 + (index >>> 16)}.${(index >>> 8) & 255}.${index & 255}`;
}

function neighbour(index: number, shape: MeshShape): string {
  return serviceName(((index % shape.services) + 1) % shape.services);
}

/** Every service, in the backends shape. */
function allServices(shape: MeshShape): string[] {
  return Array.from({ length: shape.services }, (_, index) => serviceName(index));
}

/** The services dataplane `index` calls, one outbound each, in port order. */
function calledServices(index: number, shape: MeshShape): string[] {
  return shape.backends === undefined ? [...new Set([HUB, neighbour(index, shape)])] : allServices(shape);
}

/** The version tags the `policies` variant's routes split across: a subset each. */
const VERSIONS = ['v1', 'v2'] as const;

/**
 * The tags of an inbound serving `service`; `copy` tells the endpoints of one service apart, so
 * that with `policies` both versions have endpoints.
 */
function inboundTags(service: string, copy: number, variant: MeshVariant = 'plain'): Record<string, string> {
  return variant === 'policies' ? { service, protocol: 'http', version: VERSIONS[copy % VERSIONS.length]! } : { service };
}

/** Dataplane `index`, one with an Envoy, as `cp.apply` takes it. */
export function dataplane(index: number, shape: MeshShape): object {
  const hubShape = shape.backends === undefined;
  // In the hub shape the dataplanes serving one service are every `services`-th: their copy numbers follow.
  const served = hubShape ? serviceName(index % shape.services) : 'web';
  return {
    type: 'Dataplane',
    mesh: MESH,
    name: dataplaneName(index),
    networking: {
      address: addressOf(index),
      inbound: [{ port: INBOUND_PORT, tags: inboundTags(served, Math.floor(index / shape.services), shape.variant) }],
      outbound: calledServices(index, shape).map((service, at) => ({ port: FIRST_OUTBOUND_PORT + at, service })),
    },
  };
}

/** The dataplanes without a proxy that serve the services in the backends shape; none in the hub shape. */
export function backendDataplanes(shape: MeshShape): object[] {
  const { backends = 0 } = shape;
  return allServices(shape).flatMap((service, at) =>
    Array.from({ length: backends }, (_, copy) => ({
      type: 'Dataplane',
      mesh: MESH,
      name: `${service}-${copy}`,
      networking: { address: `10.240.${at}.${copy}`, inbound: [{ port: INBOUND_PORT, tags: inboundTags(service, copy, shape.variant) }] },
    })),
  );
}

/**
 * The EDS names an Envoy for dataplane `index` asks for: its outbound clusters, one per service
 * called, and with `policies` the two version subsets of each, which its routes name.
 */
export function endpointNames(index: number, shape: MeshShape): string[] {
  const called = calledServices(index, shape);
  if (shape.variant !== 'policies') return called.sort();
  return called.flatMap((service) => [service, ...VERSIONS.map((version) => subsetClusterName(service, { version }))]).sort();
}

/**
 * The RDS names an Envoy for dataplane `index` asks for once it has its listeners: with
 * `policies`, one RouteConfiguration per outbound, named after the outbound's listener; none
 * otherwise (its outbounds are TCP proxies).
 */
export function routeNames(index: number, shape: MeshShape): string[] {
  if (shape.variant !== 'policies') return [];
  return calledServices(index, shape).map((_, at) => outboundListenerName(FIRST_OUTBOUND_PORT + at));
}

/** The SDS names every Envoy asks for once its clusters name them: with `strict`, its certificate and the mesh's trust bundle. */
export function secretNames(shape: MeshShape): string[] {
  return shape.variant === 'strict' ? [IDENTITY_SECRET, trustSecretName(MESH)] : [];
}

/**
 * The change: one more endpoint for the hub, as a new Dataplane (with no proxy of its own)
 * serving it, tagged as the hub's other endpoints are. Every node's EDS version moves; no node's
 * CDS, LDS or RDS does.
 */
export function hubEndpoint(change: number, variant: MeshVariant = 'plain'): object {
  return {
    type: 'Dataplane',
    mesh: MESH,
    name: `hub-extra-${change}`,
    networking: { address: `10.250.${(change >>> 8) & 255}.${change & 255}`, inbound: [{ port: INBOUND_PORT, tags: inboundTags(HUB, change, variant) }] },
  };
}

/** The Mesh resource a variant needs applied before its dataplanes, if any: `strict` turns mTLS on. */
export function meshResource(shape: MeshShape, certificateTTL: string): object | undefined {
  if (shape.variant !== 'strict') return undefined;
  return { type: 'Mesh', name: MESH, dataplaneAuth: 'none', mtls: { mode: 'strict', certificateTTL } };
}

/** A policy of `kind` configuring every dataplane's calls to `service` (Kuma's universal format). */
function policyTo(kind: string, service: string, entry: object): object {
  return {
    type: kind,
    name: `${kind.toLowerCase()}-${service}`,
    mesh: MESH,
    spec: { targetRef: { kind: 'Mesh' }, to: [{ targetRef: { kind: 'MeshService', name: service }, ...entry }] },
  };
}

/** The MeshHTTPRoute sending `weights[i]` percent of the calls to `service` to the subset of version `VERSIONS[i]`. */
function split(service: string, weights: readonly number[]): object {
  const backendRefs = VERSIONS.map((version, at) => ({ kind: 'MeshServiceSubset', name: service, tags: { version }, weight: weights[at] }));
  return policyTo('MeshHTTPRoute', service, { rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }], default: { backendRefs } }] });
}

/** The canary's first weights: 90 % to v1, 10 % to v2. */
const CANARY = [90, 10] as const;

/** With `policies`, per service: a 90/10 split, a timeout, a retry and a circuit breaker; none otherwise. */
export function policies(shape: MeshShape): object[] {
  if (shape.variant !== 'policies') return [];
  return allServices(shape).flatMap((service) => [
    split(service, CANARY),
    policyTo('MeshTimeout', service, { default: { connectionTimeout: '2s', idleTimeout: '20s', http: { requestTimeout: '1s' } } }),
    policyTo('MeshRetry', service, { default: { http: { numRetries: 3, retryOn: ['5xx'] } } }),
    policyTo('MeshCircuitBreaker', service, { default: { connectionLimits: { maxConnections: 100, maxPendingRequests: 100, maxRequests: 100 } } }),
  ]);
}

/**
 * The policy change: the hub's MeshHTTPRoute rewritten, 50/50 on odd changes and back to 90/10 on
 * even ones, so each is a new route for every node that calls the hub. Every such node's RDS
 * version moves; no node's CDS, EDS or LDS does.
 */
export function hubRoute(change: number): object {
  return split(HUB, change % 2 === 1 ? [50, 50] : CANARY);
}
