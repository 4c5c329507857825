/**
 * The mesh the session bench serves: `nodes` Envoy dataplanes spread over `services`
 * services. Dataplane i serves service i mod `services` on one inbound and calls two
 * services: its neighbour, and the hub (`svc-00`), which every node calls. A change to the
 * hub's endpoints is therefore one every node's configuration depends on.
 */
export interface MeshShape {
  readonly nodes: number;
  readonly services: number;
}

export const MESH = 'default';
const INBOUND_PORT = 10001;
const HUB_OUTBOUND_PORT = 20001;
const NEIGHBOUR_OUTBOUND_PORT = 20002;

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

/** Dataplane `index` as `cp.apply` takes it. */
export function dataplane(index: number, shape: MeshShape): object {
  return {
    type: 'Dataplane',
    mesh: MESH,
    name: dataplaneName(index),
    networking: {
      address: addressOf(index),
      inbound: [{ port: INBOUND_PORT, tags: { service: serviceName(index % shape.services) } }],
      outbound: [
        { port: HUB_OUTBOUND_PORT, service: HUB },
        { port: NEIGHBOUR_OUTBOUND_PORT, service: neighbour(index, shape) },
      ],
    },
  };
}

/** The EDS names an Envoy for dataplane `index` asks for: its outbound clusters, one per service called. */
export function endpointNames(index: number, shape: MeshShape): string[] {
  return [...new Set([HUB, neighbour(index, shape)])].sort();
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
