export {
  BACKEND_REF_KINDS,
  GRPC_RETRY_ON,
  HTTP_RETRY_ON,
  HEADER_MATCH_TYPES,
  isPolicyType,
  PATH_MATCH_TYPES,
  POLICY_PLURALS,
  POLICY_TYPES,
  TO_TARGET_KINDS,
  TOP_TARGET_KINDS,
  type BackendRef,
  type BackendRefKind,
  type BackOff,
  type CircuitBreakerConf,
  type ConnectionLimits,
  type HeaderMatchType,
  type HttpMatch,
  type HttpRule,
  type MeshCircuitBreaker,
  type MeshHTTPRoute,
  type MeshRetry,
  type MeshTimeout,
  type OutlierDetection,
  type PathMatchType,
  type Policy,
  type PolicyType,
  type RetryConf,
  type RetrySettings,
  type Tags,
  type TargetRef,
  type TimeoutConf,
  type ToTargetKind,
  type TopTargetKind,
} from './policy-resources.js';
export { DURATION_RULE, MAX_DURATION_MS, parseDuration, protoDuration } from './policy-durations.js';
export { comparePrecedence, type Ranked } from './precedence.js';
export type { FieldSource, Merged, PolicyRef } from './merge-confs.js';
export type { EffectiveRoute } from './http-route-rules.js';
export { appliesTo, hasTags, selects, type Selectable } from './target-refs.js';
export { MeshPolicies, PolicySelection, type OutboundPolicies } from './mesh-policies.js';
