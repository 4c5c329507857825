import {
  GRPC_RETRY_ON,
  HTTP_RETRY_ON,
  parseDuration,
  protoDuration,
  type BackendRef,
  type EffectiveRoute,
  type HttpMatch,
  type OutboundPolicies,
  type PolicyRef,
  type RetrySettings,
  type Tags,
} from '../policies/index.js';
import { FieldRows, type FieldExplanation } from './field-rows.js';
import type { MeshServices } from './mesh-services.js';
import type { Protocol } from './protocols.js';

/** Who a configuration is rendered for: an Envoy sidecar, or a proxyless gRPC client. */
export type ClientKind = 'envoy' | 'grpc';

/** A cluster a route sends requests to: a whole service's, or a subset's (`tags`). */
export interface ClusterRef {
  readonly name: string;
  readonly service: string;
  readonly tags?: Tags;
}

/** A share of a route's requests. */
export interface Backend {
  readonly cluster: string;
  readonly weight: number;
}

/** A route of an outbound's effective routing, as inspection shows it. */
export interface RouteExplanation {
  /** `PathPrefix /v2`, `Exact /health, header x-canary present`, or `any other request`. */
  readonly match: string;
  readonly backends: readonly Backend[];
  /** Absent for the catch-all route to the service. */
  readonly from?: PolicyRef;
  readonly lost: readonly PolicyRef[];
  readonly notApplied?: string;
}

/**
 * How an outbound's calls are routed for one client, before encoding: the routes (the policies'
 * first, the catch-all to the service last), what every route action carries (timeouts,
 * retries), the clusters they name, and the explanation of each field. Pure data, a function of
 * the effective policies and the mesh state, so inspection shows what was rendered (I9).
 */
export interface RoutePlan {
  /** Whether the outbound is an HTTP connection manager (a TCP proxy otherwise; always for gRPC). */
  readonly http: boolean;
  readonly routes: readonly { readonly matches: readonly object[]; readonly backends: readonly Backend[] }[];
  /** RouteAction fields besides the destination: timeout, idle_timeout, max_stream_duration, retry_policy. */
  readonly action: Readonly<Record<string, unknown>>;
  /** Envoy: the listener's idle timeout (HCM or TCP proxy). */
  readonly idleTimeout?: string;
  /** Every cluster the routes name, the service's own first. */
  readonly clusters: readonly ClusterRef[];
  readonly fields: readonly FieldExplanation[];
  readonly routesExplained: readonly RouteExplanation[];
  /** Shares that had nowhere to go and went to the service instead (I9): shown, never pushed as a dangling route. */
  readonly errors: readonly string[];
  /** Equal keys, equal resources. */
  readonly key: string;
}

const TCP = (protocol: Protocol) => `the service speaks ${protocol}: HTTP settings need protocol http, http2 or grpc`;

export function planRoutes(client: ClientKind, ops: OutboundPolicies, protocol: Protocol, services: MeshServices): RoutePlan {
  const http = client === 'grpc' || protocol !== 'tcp';
  const timeouts = new FieldRows('MeshTimeout', ops.timeout);
  const retries = new FieldRows('MeshRetry', ops.retry);
  const action: Record<string, unknown> = {};
  let idleTimeout: string | undefined;

  if (client === 'envoy') {
    idleTimeout = timeouts.get('idleTimeout');
    timeouts.applied('idleTimeout', http ? 'HttpConnectionManager.common_http_protocol_options.idle_timeout' : 'TcpProxy.idle_timeout', '1h');
    if (http) {
      setDuration(action, 'timeout', timeouts.get('http.requestTimeout'));
      setDuration(action, 'idle_timeout', timeouts.get('http.streamIdleTimeout'));
      const max = timeouts.get<string>('http.maxStreamDuration');
      if (max !== undefined) action['max_stream_duration'] = { max_stream_duration: protoDuration(max) };
      timeouts.applied('http.requestTimeout', 'RouteAction.timeout', '15s');
      timeouts.applied('http.streamIdleTimeout', 'RouteAction.idle_timeout', '5m');
      timeouts.applied('http.maxStreamDuration', 'RouteAction.max_stream_duration', 'none');
    } else {
      timeouts.notApplied('http', TCP(protocol));
    }
  } else {
    timeouts.notApplied('idleTimeout', 'grpc-js 1.14.1 reads an api_listener idle_timeout as a deadline for every RPC, so none is sent');
    const request = timeouts.get<string>('http.requestTimeout');
    const max = timeouts.get<string>('http.maxStreamDuration');
    // 0 means no limit (A31), so a zero never wins over a limit the other field sets.
    const limit = [request, max].filter((each) => each !== undefined && parseDuration(each)! > 0).sort((a, b) => parseDuration(a!)! - parseDuration(b!)!)[0];
    if (limit !== undefined) action['max_stream_duration'] = { max_stream_duration: protoDuration(limit) };
    const both = request !== undefined && max !== undefined ? ' (with http.maxStreamDuration: the smaller is sent)' : '';
    timeouts.applied('http.requestTimeout', `RouteAction.max_stream_duration${both}; gRPC ignores RouteAction.timeout (A31)`);
    timeouts.applied('http.maxStreamDuration', 'RouteAction.max_stream_duration', request === undefined ? 'none: the caller’s deadline' : undefined);
    timeouts.notApplied('http.streamIdleTimeout', 'gRPC ignores RouteAction.idle_timeout (A31)');
  }

  const section = client === 'grpc' || protocol === 'grpc' ? 'grpc' : http ? 'http' : undefined;
  if (section === undefined) retries.notApplied('', TCP(protocol));
  else {
    const other = section === 'grpc' ? 'http' : 'grpc';
    retries.notApplied(
      other,
      client === 'grpc' ? 'a proxyless gRPC client retries on gRPC status codes: the grpc section applies' : `the service speaks ${protocol}: the ${section} section applies`,
    );
    const settings = ops.retry.conf[section];
    if (settings === undefined) retries.rows.push({ policy: 'MeshRetry', field: section, value: 'none', lost: [], as: 'no retry_policy: a failed request is not retried' });
    else {
      const policy = client === 'grpc' ? grpcRetryPolicy(settings, retries) : envoyRetryPolicy(section, settings, retries);
      if (policy !== undefined) action['retry_policy'] = policy;
    }
  }

  const routing = planRouting(client, ops, http, protocol, services);
  const fields = [...timeouts.rows, ...retries.rows];
  return Object.freeze({
    http,
    routes: routing.routes,
    action: Object.freeze(action),
    ...(idleTimeout !== undefined && { idleTimeout }),
    clusters: routing.clusters,
    fields: Object.freeze(fields),
    routesExplained: routing.explained,
    errors: routing.errors,
    key: JSON.stringify([http, routing.routes, action, idleTimeout, routing.clusters]),
  });
}

function setDuration(target: Record<string, unknown>, field: string, value: string | undefined): void {
  if (value !== undefined) target[field] = protoDuration(value);
}

/** Kuma's HTTP retry conditions as Envoy's `retry_on` words. */
const ENVOY_HTTP_RETRY_ON: Readonly<Record<(typeof HTTP_RETRY_ON)[number], string>> = {
  '5xx': '5xx',
  GatewayError: 'gateway-error',
  Reset: 'reset',
  Retriable4xx: 'retriable-4xx',
  ConnectFailure: 'connect-failure',
  EnvoyRatelimited: 'envoy-ratelimited',
  RefusedStream: 'refused-stream',
};

/** gRPC status names as `retry_on` words: Envoy's and gRPC's (A44) are the same. */
const GRPC_RETRY_WORDS: Readonly<Record<(typeof GRPC_RETRY_ON)[number], string>> = {
  Canceled: 'cancelled',
  DeadlineExceeded: 'deadline-exceeded',
  Internal: 'internal',
  ResourceExhausted: 'resource-exhausted',
  Unavailable: 'unavailable',
};

const DEFAULT_BASE_INTERVAL = '25ms';

function envoyRetryPolicy(section: 'http' | 'grpc', settings: RetrySettings, rows: FieldRows): object {
  const conditions = settings.retryOn.length > 0 ? settings.retryOn : section === 'http' ? HTTP_RETRY_ON : GRPC_RETRY_ON;
  const codes = conditions.filter((condition) => /^\d+$/.test(condition)).map(Number);
  const words = conditions
    .filter((condition) => !/^\d+$/.test(condition))
    .map((condition) => (section === 'http' ? ENVOY_HTTP_RETRY_ON : GRPC_RETRY_WORDS)[condition as never] as string);
  const retryOn = [...words, ...(codes.length > 0 ? ['retriable-status-codes'] : [])].join(',');
  rows.applied(`${section}.numRetries`, 'RetryPolicy.num_retries', 1);
  rows.applied(`${section}.retryOn`, 'RetryPolicy.retry_on', retryOn);
  rows.applied(`${section}.perTryTimeout`, 'RetryPolicy.per_try_timeout', 'none');
  rows.applied(`${section}.backOff.baseInterval`, 'RetryPolicy.retry_back_off.base_interval', DEFAULT_BASE_INTERVAL);
  rows.applied(`${section}.backOff.maxInterval`, 'RetryPolicy.retry_back_off.max_interval', '10 × baseInterval');
  return {
    retry_on: retryOn,
    ...(settings.numRetries !== undefined && { num_retries: { value: settings.numRetries } }),
    ...(settings.perTryTimeout !== undefined && { per_try_timeout: protoDuration(settings.perTryTimeout) }),
    ...(settings.backOff !== undefined && { retry_back_off: backOff(settings.backOff) }),
    ...(codes.length > 0 && { retriable_status_codes: codes }),
  };
}

/**
 * Retries as gRPC honours them (A44): status codes, at most 4 retries (5 attempts), a back-off
 * that always has a base interval no larger than its maximum (anything else is a NACK), and no
 * per-try timeout (ignored, so not sent). No retries at all is no retry policy: gRPC NACKs
 * `num_retries` below 1.
 */
function grpcRetryPolicy(settings: RetrySettings, rows: FieldRows): object | undefined {
  const wanted = settings.numRetries ?? 1;
  rows.notApplied('grpc.perTryTimeout', 'gRPC ignores per_try_timeout (A44)');
  if (wanted === 0) {
    rows.applied('grpc.numRetries', 'no retry_policy: gRPC refuses num_retries 0');
    return undefined;
  }
  const retries = Math.min(wanted, 4);
  rows.applied('grpc.numRetries', retries < wanted ? 'RetryPolicy.num_retries = 4: gRPC makes at most 5 attempts (A44)' : 'RetryPolicy.num_retries', 1);
  const conditions = settings.retryOn.length > 0 ? settings.retryOn : GRPC_RETRY_ON;
  const retryOn = conditions.map((condition) => GRPC_RETRY_WORDS[condition as keyof typeof GRPC_RETRY_WORDS]).join(',');
  rows.applied('grpc.retryOn', 'RetryPolicy.retry_on', retryOn);
  rows.applied('grpc.backOff.baseInterval', 'RetryPolicy.retry_back_off.base_interval', DEFAULT_BASE_INTERVAL);
  rows.applied('grpc.backOff.maxInterval', 'RetryPolicy.retry_back_off.max_interval', '10 × baseInterval');
  return {
    retry_on: retryOn,
    num_retries: { value: retries },
    ...(settings.backOff !== undefined && { retry_back_off: backOff(settings.backOff) }),
  };
}

/** A back-off whose base interval is set (both clients need one) and at most its maximum. */
function backOff({ baseInterval, maxInterval }: RetrySettings['backOff'] & object): object {
  const fallback = maxInterval !== undefined && parseDuration(maxInterval)! < parseDuration(DEFAULT_BASE_INTERVAL)! ? maxInterval : DEFAULT_BASE_INTERVAL;
  return {
    base_interval: protoDuration(baseInterval ?? fallback),
    ...(maxInterval !== undefined && { max_interval: protoDuration(maxInterval) }),
  };
}

interface Routing {
  readonly routes: RoutePlan['routes'];
  readonly clusters: readonly ClusterRef[];
  readonly explained: readonly RouteExplanation[];
  readonly errors: readonly string[];
}

/**
 * The routes of an outbound: each effective route a client can honour, its backendRefs resolved
 * to clusters, then the catch-all to the service itself, so that no request matches nothing.
 */
function planRouting(client: ClientKind, ops: OutboundPolicies, http: boolean, protocol: Protocol, services: MeshServices): Routing {
  const { service } = ops;
  const clusters = new Map<string, ClusterRef>([[service, { name: service, service }]]);
  const explained: RouteExplanation[] = [];
  const errors: string[] = [];
  const routes: Array<RoutePlan['routes'][number]> = [];
  for (const route of ops.routes) {
    const label = matchLabel(route.match);
    const refusal = !http ? TCP(protocol) : client === 'grpc' ? grpcRefusal(route.match) : undefined;
    if (refusal !== undefined) {
      explained.push({ match: label, backends: [], from: route.from, lost: route.lost, notApplied: refusal });
      continue;
    }
    const backends = resolveBackends(client, route, label, services, clusters, errors, service);
    explained.push({ match: label, backends, from: route.from, lost: route.lost });
    routes.push({ matches: renderMatches(client, route.match), backends });
  }
  if (http) {
    const all = [{ cluster: service, weight: client === 'grpc' ? 100 : 1 }];
    routes.push({ matches: [{ prefix: client === 'grpc' ? '' : '/' }], backends: all });
    explained.push({ match: 'any other request', backends: all, lost: [] });
  }
  return { routes: Object.freeze(routes), clusters: Object.freeze([...clusters.values()]), explained: Object.freeze(explained), errors: Object.freeze(errors) };
}

/** Why a proxyless gRPC client cannot honour a match (A28); the route is left out for it. */
function grpcRefusal(match: HttpMatch): string | undefined {
  if (match.method !== undefined) return 'gRPC header matchers never see :method (A28): the route would match no RPC, so it is left out';
  const binary = match.headers.find((header) => header.name.toLowerCase().endsWith('-bin'));
  if (binary !== undefined) return `gRPC matches no -bin header (A28): ${binary.name}; the route is left out`;
  return undefined;
}

/**
 * The clusters and weights of a route. A share whose target has no endpoints (a subset no
 * inbound carries, a service nobody serves) goes to the rest of the service instead, and the
 * error says so (I9): a route never points at nothing. Envoy gets the weights as written
 * (Kuma's), gRPC weights summing to 100 (reference/traffic-policies.md §2).
 */
function resolveBackends(
  client: ClientKind,
  route: EffectiveRoute,
  label: string,
  services: MeshServices,
  clusters: Map<string, ClusterRef>,
  errors: string[],
  service: string,
): Backend[] {
  const refs: readonly BackendRef[] = route.backendRefs.length > 0 ? route.backendRefs : [{ kind: 'MeshService', name: service, tags: {}, weight: 1 }];
  const shares = new Map<string, number>();
  for (const ref of refs) {
    if (ref.weight === 0) continue;
    const target = resolveRef(ref, services, service);
    if (target.error !== undefined) errors.push(`${label} (${route.from.type} ${route.from.name}): ${target.error}`);
    clusters.set(target.cluster.name, target.cluster);
    shares.set(target.cluster.name, (shares.get(target.cluster.name) ?? 0) + ref.weight);
  }
  const backends = [...shares].map(([cluster, weight]) => ({ cluster, weight }));
  return client === 'grpc' ? percentages(backends) : backends;
}

function resolveRef(ref: BackendRef, services: MeshServices, service: string): { cluster: ClusterRef; error?: string } {
  const exists = services.service(ref.name) !== undefined;
  const fallback = exists ? ref.name : service;
  if (ref.kind === 'MeshServiceSubset') {
    const subset = services.subset(ref.name, ref.tags);
    if (subset.size > 0) return { cluster: { name: subset.name, service: ref.name, tags: ref.tags } };
    return { cluster: { name: fallback, service: fallback }, error: `${subset.name} has no endpoints; its share (weight ${ref.weight}) goes to ${fallback}` };
  }
  if (exists || ref.name === service) return { cluster: { name: ref.name, service: ref.name } };
  return { cluster: { name: service, service }, error: `service ${ref.name} has no endpoints; its share (weight ${ref.weight}) goes to ${service}` };
}

/** Weights as whole percentages summing to 100, by largest remainder; a share rounded to 0 is left out. */
function percentages(backends: readonly Backend[]): Backend[] {
  const total = backends.reduce((sum, { weight }) => sum + weight, 0);
  const exact = backends.map(({ weight }) => (weight * 100) / total);
  const whole = exact.map(Math.floor);
  let left = 100 - whole.reduce((sum, each) => sum + each, 0);
  const byRemainder = exact.map((value, i) => ({ i, rest: value - whole[i]! })).sort((a, b) => b.rest - a.rest || a.i - b.i);
  for (const { i } of byRemainder) {
    if (left === 0) break;
    whole[i]! += 1;
    left -= 1;
  }
  return backends.map(({ cluster }, i) => ({ cluster, weight: whole[i]! })).filter(({ weight }) => weight > 0);
}

/**
 * A match as RouteMatch messages. PathPrefix is Kuma's: `/v2` matches `/v2` and `/v2/…` but not
 * `/v2x`, so it is two matches, the exact path and the prefix `/v2/`.
 */
function renderMatches(client: ClientKind, match: HttpMatch): object[] {
  const headers = match.headers.map(({ type, name, value }) =>
    type === 'Present' ? { name: name.toLowerCase(), present_match: true } : { name: name.toLowerCase(), string_match: { exact: value ?? '' } },
  );
  if (match.method !== undefined) headers.push({ name: ':method', string_match: { exact: match.method } });
  const extra = headers.length > 0 ? { headers } : {};
  const { path } = match;
  if (path === undefined) return [{ prefix: client === 'grpc' ? '' : '/', ...extra }];
  if (path.type === 'Exact') return [{ path: path.value, ...extra }];
  const prefix = path.value.replace(/\/+$/, '');
  if (prefix === '') return [{ prefix: '/', ...extra }];
  return [
    { path: prefix, ...extra },
    { prefix: `${prefix}/`, ...extra },
  ];
}

function matchLabel(match: HttpMatch): string {
  const parts = [
    match.path === undefined ? 'any path' : `${match.path.type} ${match.path.value}`,
    ...(match.method === undefined ? [] : [`method ${match.method}`]),
    ...match.headers.map((header) => (header.type === 'Present' ? `header ${header.name} present` : `header ${header.name} = ${header.value ?? ''}`)),
  ];
  return parts.join(', ');
}
