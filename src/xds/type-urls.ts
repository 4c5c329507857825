const prefix = 'type.googleapis.com/';

export const LISTENER = `${prefix}envoy.config.listener.v3.Listener` as const;
export const ROUTE = `${prefix}envoy.config.route.v3.RouteConfiguration` as const;
export const CLUSTER = `${prefix}envoy.config.cluster.v3.Cluster` as const;
export const ENDPOINT = `${prefix}envoy.config.endpoint.v3.ClusterLoadAssignment` as const;
export const SECRET = `${prefix}envoy.extensions.transport_sockets.tls.v3.Secret` as const;

/**
 * The types Chancery serves, in the order one ADS stream must push them (I5, make before
 * break): clusters first, then their endpoints, then the listeners that use them, then the
 * routes those listeners name, then the secrets (SDS) both name. The order of this tuple MATTERS.
 *
 * SDS last, as Istio pushes it (pilot `PushOrder`): Envoy asks for a Secret only once a Cluster
 * or Listener names it, and keeps that one warming until it has it; every Secret a snapshot's
 * resources name is in the same snapshot (I8), so it is answered the moment it is asked for,
 * whatever came before. The names are stable per node, so a renewal is an SDS push alone: a
 * Secret's new version swaps the TLS context for new connections without touching the rest.
 */
export const PUSH_ORDER = [CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET] as const;

export type TypeUrl = (typeof PUSH_ORDER)[number];

/** Short names for logs, metrics labels and the API. */
export const SHORT_NAME: Readonly<Record<TypeUrl, 'CDS' | 'EDS' | 'LDS' | 'RDS' | 'SDS'>> = {
  [CLUSTER]: 'CDS',
  [ENDPOINT]: 'EDS',
  [LISTENER]: 'LDS',
  [ROUTE]: 'RDS',
  [SECRET]: 'SDS',
};

/**
 * Listener and Cluster are "full state" in SotW: a response carries every resource of the
 * type the client should have, and one it omits is deleted (xDS protocol, "Grouping").
 * They are also the only types with a wildcard subscription.
 */
export const FULL_STATE: ReadonlySet<TypeUrl> = new Set([LISTENER, CLUSTER]);

export function isTypeUrl(value: string): value is TypeUrl {
  return (PUSH_ORDER as readonly string[]).includes(value);
}

/** The protobuf message name of a type URL: what follows the last `/`. */
export function messageName(typeUrl: string): string {
  return typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
}
