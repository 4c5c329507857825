/**
 * What a service speaks (DESIGN §6, wave 3): an inbound's tag `protocol`, `tcp` when left out.
 * HTTP services get an HTTP connection manager with RDS on Envoy outbounds, so HTTP policies
 * (routes, request timeouts, retries) can apply; a `tcp` service stays a TCP proxy.
 */
export type Protocol = 'tcp' | 'http' | 'http2' | 'grpc';
export const PROTOCOLS: readonly Protocol[] = ['tcp', 'http', 'http2', 'grpc'];

/** The tag an inbound names its protocol with. */
export const PROTOCOL_TAG = 'protocol';

/**
 * Each protocol with those it is carried over, most specific first: gRPC is HTTP/2, and every
 * one of them is TCP. HTTP/1.1 and HTTP/2 share nothing but TCP: an HTTP/1.1 client could not
 * call an HTTP/2-only endpoint (Kuma's protocol stacks are the same).
 */
const STACKS: Readonly<Record<Protocol, readonly Protocol[]>> = {
  tcp: ['tcp'],
  http: ['http', 'tcp'],
  http2: ['http2', 'tcp'],
  grpc: ['grpc', 'http2', 'tcp'],
};

/** The protocol an inbound's tags declare. */
export function protocolOf(tags: Readonly<Record<string, string>>): Protocol {
  const tag = tags[PROTOCOL_TAG];
  return tag !== undefined && (PROTOCOLS as readonly string[]).includes(tag) ? (tag as Protocol) : 'tcp';
}

/** The most specific protocol both speak: what a caller can use whichever of the two it reaches. */
export function commonProtocol(a: Protocol, b: Protocol): Protocol {
  if (a === b) return a;
  const other = STACKS[b];
  return STACKS[a].find((protocol) => other.includes(protocol)) ?? 'tcp';
}

/**
 * A service's protocol as its callers use it: the common protocol of every inbound that
 * serves it, and, when they disagree, what each declared (shown in inspection).
 */
export interface ServiceProtocol {
  readonly protocol: Protocol;
  /** Each protocol the service's inbounds declare, sorted; more than one when mixed. */
  readonly declared: readonly Protocol[];
}

/** The protocol of a service no inbound serves yet: a TCP proxy, which carries anything. */
export const UNKNOWN_SERVICE_PROTOCOL: ServiceProtocol = Object.freeze({ protocol: 'tcp', declared: Object.freeze([]) });

/** Folds the protocols a service's inbounds declare into the one its callers use. */
export function serviceProtocol(declared: ReadonlySet<Protocol>): ServiceProtocol {
  const sorted = [...declared].sort();
  let protocol: Protocol | undefined;
  for (const each of sorted) protocol = protocol === undefined ? each : commonProtocol(protocol, each);
  return Object.freeze({ protocol: protocol ?? 'tcp', declared: Object.freeze(sorted) });
}
