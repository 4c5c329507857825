/**
 * Traffic policies, in Kuma's universal format (DESIGN §6, wave 3; reference/traffic-policies.md
 * §3): `type`, `mesh`, `name`, and a `spec` whose `targetRef` selects the dataplanes the policy
 * configures and whose `to[]` entries each select the services it configures them to call, with
 * the configuration (`default`, or `rules` for a MeshHTTPRoute). The shapes here are what
 * validation (src/mesh/validate-policy.ts) yields and what proto/chancery/v1/resources.proto
 * reads back: lists and tag maps are always present (empty when not written), scalars and
 * objects only when written. Durations are kept as written, in Go's format (`1s`, `500ms`, `1h30m`).
 */

export type Tags = Readonly<Record<string, string>>;

/** What a top-level `spec.targetRef` may select: every dataplane, those with some inbound tags, or those serving a service. */
export type TopTargetKind = 'Mesh' | 'MeshSubset' | 'MeshService';
export const TOP_TARGET_KINDS: readonly TopTargetKind[] = ['Mesh', 'MeshSubset', 'MeshService'];

/** What a `to[].targetRef` may select: every service called, or one. */
export type ToTargetKind = 'Mesh' | 'MeshService';
export const TO_TARGET_KINDS: readonly ToTargetKind[] = ['Mesh', 'MeshService'];

/** A selector: `name` only for a MeshService, `tags` (non-empty) only for a MeshSubset. */
export interface TargetRef<K extends string = TopTargetKind> {
  readonly kind: K;
  readonly name?: string;
  readonly tags: Tags;
}

export interface TimeoutConf {
  readonly connectionTimeout?: string;
  readonly idleTimeout?: string;
  readonly http?: {
    readonly requestTimeout?: string;
    readonly streamIdleTimeout?: string;
    readonly maxStreamDuration?: string;
  };
}

export interface BackOff {
  readonly baseInterval?: string;
  readonly maxInterval?: string;
}

/** HTTP retry conditions, as Kuma writes them; an HTTP status (`503`) is one too. */
export const HTTP_RETRY_ON = ['5xx', 'GatewayError', 'Reset', 'Retriable4xx', 'ConnectFailure', 'EnvoyRatelimited', 'RefusedStream'] as const;
/** gRPC retry conditions: status names, as Kuma writes them. */
export const GRPC_RETRY_ON = ['Canceled', 'DeadlineExceeded', 'Internal', 'ResourceExhausted', 'Unavailable'] as const;

/** One protocol's retry settings; `retryOn` empty means the default conditions. */
export interface RetrySettings {
  readonly numRetries?: number;
  readonly perTryTimeout?: string;
  readonly backOff?: BackOff;
  readonly retryOn: readonly string[];
}

export interface RetryConf {
  readonly http?: RetrySettings;
  readonly grpc?: RetrySettings;
}

export interface ConnectionLimits {
  readonly maxConnections?: number;
  readonly maxPendingRequests?: number;
  readonly maxRequests?: number;
  readonly maxRetries?: number;
}

export interface OutlierDetection {
  readonly interval?: string;
  readonly baseEjectionTime?: string;
  readonly maxEjectionPercent?: number;
  readonly detectors?: {
    readonly totalFailures?: { readonly consecutive?: number };
    readonly gatewayFailures?: { readonly consecutive?: number };
    readonly failurePercentage?: { readonly requestVolume?: number; readonly minimumHosts?: number; readonly threshold?: number };
    readonly successRate?: { readonly requestVolume?: number; readonly minimumHosts?: number; readonly standardDeviationFactor?: number };
  };
}

export interface CircuitBreakerConf {
  readonly connectionLimits?: ConnectionLimits;
  readonly outlierDetection?: OutlierDetection;
}

export type PathMatchType = 'Exact' | 'PathPrefix';
export const PATH_MATCH_TYPES: readonly PathMatchType[] = ['Exact', 'PathPrefix'];
export type HeaderMatchType = 'Exact' | 'Present';
export const HEADER_MATCH_TYPES: readonly HeaderMatchType[] = ['Exact', 'Present'];

/** One way a request can match a rule: all of what it states (path, method, headers) must hold. */
export interface HttpMatch {
  readonly path?: { readonly type: PathMatchType; readonly value: string };
  readonly method?: string;
  /** `value` only for `Exact`. */
  readonly headers: readonly { readonly type: HeaderMatchType; readonly name: string; readonly value?: string }[];
}

export type BackendRefKind = 'MeshService' | 'MeshServiceSubset';
export const BACKEND_REF_KINDS: readonly BackendRefKind[] = ['MeshService', 'MeshServiceSubset'];

/** Where a share of a rule's requests goes: a service, or the endpoints of a service with some tags. */
export interface BackendRef {
  readonly kind: BackendRefKind;
  readonly name: string;
  /** Non-empty only for a MeshServiceSubset. */
  readonly tags: Tags;
  /** Written as Kuma does, 1 when left out. */
  readonly weight: number;
}

export interface HttpRule {
  /** Any one of them matching selects the rule. */
  readonly matches: readonly HttpMatch[];
  /** `backendRefs` empty sends the rule's requests to the `to[]` service itself. */
  readonly default: { readonly backendRefs: readonly BackendRef[] };
}

interface PolicyOf<T extends string, Entry> {
  readonly type: T;
  readonly mesh: string;
  readonly name: string;
  readonly spec: { readonly targetRef: TargetRef; readonly to: readonly Entry[] };
}

interface ToEntry<Conf> {
  readonly targetRef: TargetRef<ToTargetKind>;
  readonly default: Conf;
}

export type MeshTimeout = PolicyOf<'MeshTimeout', ToEntry<TimeoutConf>>;
export type MeshRetry = PolicyOf<'MeshRetry', ToEntry<RetryConf>>;
export type MeshCircuitBreaker = PolicyOf<'MeshCircuitBreaker', ToEntry<CircuitBreakerConf>>;
export type MeshHTTPRoute = PolicyOf<'MeshHTTPRoute', { readonly targetRef: TargetRef<'MeshService'>; readonly rules: readonly HttpRule[] }>;

export type Policy = MeshHTTPRoute | MeshTimeout | MeshRetry | MeshCircuitBreaker;
export type PolicyType = Policy['type'];
export const POLICY_TYPES: readonly PolicyType[] = ['MeshHTTPRoute', 'MeshTimeout', 'MeshRetry', 'MeshCircuitBreaker'];

/** Each policy type's collection in the HTTP API, `/meshes/{mesh}/<plural>`: Kuma's names. */
export const POLICY_PLURALS: Readonly<Record<PolicyType, string>> = {
  MeshHTTPRoute: 'meshhttproutes',
  MeshTimeout: 'meshtimeouts',
  MeshRetry: 'meshretries',
  MeshCircuitBreaker: 'meshcircuitbreakers',
};

export function isPolicyType(type: string): type is PolicyType {
  return (POLICY_TYPES as readonly string[]).includes(type);
}
