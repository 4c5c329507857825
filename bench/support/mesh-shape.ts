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
}

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

/** Dataplane `index`, one with an Envoy, as `cp.apply` takes it. */
export function dataplane(index: number, shape: MeshShape): object {
  const hubShape = shape.backends === undefined;
  const called = hubShape ? [HUB, neighbour(index, shape)] : allServices(shape);
  return {
    type: 'Dataplane',
    mesh: MESH,
    name: dataplaneName(index),
    networking: {
      address: addressOf(index),
      inbound: [{ port: INBOUND_PORT, tags: { service: hubShape ? serviceName(index % shape.services) : 'web' } }],
      outbound: [...new Set(called)].map((service, at) => ({ port: FIRST_OUTBOUND_PORT + at, service })),
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
      networking: { address: `10.240.${at}.${copy}`, inbound: [{ port: INBOUND_PORT, tags: { service } }] },
    })),
  );
}

/** The EDS names an Envoy for dataplane `index` asks for: its outbound clusters, one per service called. */
export function endpointNames(index: number, shape: MeshShape): string[] {
  return shape.backends === undefined ? [...new Set([HUB, neighbour(index, shape)])].sort() : allServices(shape);
}

/**
 * The change: one more endpoint for the hub, as a new Dataplane (with no proxy of its own)
 * serving it. Every node's EDS version moves; no node's CDS or LDS does.
 */
export function hubEndpoint(change: number): object {
  return {
    type: 'Dataplane',
    mesh: MESH,
    name: `hub-extra-${change}`,
    networking: { address: `10.250.${(change >>> 8) & 255}.${change & 255}`, inbound: [{ port: INBOUND_PORT, tags: { service: HUB } }] },
  };
}
