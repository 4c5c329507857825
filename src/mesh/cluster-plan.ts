import { protoDuration, type CircuitBreakerConf, type OutboundPolicies } from '../policies/index.js';
import { anyOf } from '../xds/index.js';
import { CONNECT_TIMEOUT, HTTP_PROTOCOL_OPTIONS } from './envoy-fragments.js';
import { FieldRows, type FieldExplanation } from './field-rows.js';
import type { Protocol } from './protocols.js';
import type { ClientKind } from './route-plan.js';

/**
 * What the clusters of one service carry for one client, before encoding: the fields besides
 * the name and the endpoints source (connect timeout, circuit breakers, outlier detection,
 * HTTP/2 upstream), and the explanation of each policy field.
 */
export interface ClusterPlan {
  readonly fields: Readonly<Record<string, unknown>>;
  readonly explained: readonly FieldExplanation[];
  readonly key: string;
}

const GRPC_LIMITS = 'gRPC honours only max_requests (A32)';

export function planCluster(client: ClientKind, ops: OutboundPolicies, protocol: Protocol): ClusterPlan {
  const timeouts = new FieldRows('MeshTimeout', ops.timeout);
  const breakers = new FieldRows('MeshCircuitBreaker', ops.circuitBreaker);
  const fields: Record<string, unknown> = {};
  const connect = timeouts.get<string>('connectionTimeout');
  if (client === 'envoy') {
    fields['connect_timeout'] = connect === undefined ? CONNECT_TIMEOUT : protoDuration(connect);
    timeouts.applied('connectionTimeout', 'Cluster.connect_timeout', '5s');
  } else {
    // The cluster every gRPC client gets without policies has it; gRPC reads none.
    fields['connect_timeout'] = CONNECT_TIMEOUT;
    timeouts.notApplied('connectionTimeout', 'gRPC ignores Cluster.connect_timeout: it backs off connection attempts on its own');
  }

  const limits = ops.circuitBreaker.conf.connectionLimits;
  if (client === 'envoy') {
    if (limits !== undefined && Object.keys(limits).length > 0) {
      fields['circuit_breakers'] = {
        thresholds: [
          {
            priority: 'DEFAULT',
            ...(limits.maxConnections !== undefined && { max_connections: { value: limits.maxConnections } }),
            ...(limits.maxPendingRequests !== undefined && { max_pending_requests: { value: limits.maxPendingRequests } }),
            ...(limits.maxRequests !== undefined && { max_requests: { value: limits.maxRequests } }),
            ...(limits.maxRetries !== undefined && { max_retries: { value: limits.maxRetries } }),
          },
        ],
      };
    }
    breakers.applied('connectionLimits.maxConnections', 'CircuitBreakers.thresholds.max_connections', 1024);
    breakers.applied('connectionLimits.maxPendingRequests', 'CircuitBreakers.thresholds.max_pending_requests', 1024);
    breakers.applied('connectionLimits.maxRequests', 'CircuitBreakers.thresholds.max_requests', 1024);
    breakers.applied('connectionLimits.maxRetries', 'CircuitBreakers.thresholds.max_retries', 3);
  } else {
    if (limits?.maxRequests !== undefined) fields['circuit_breakers'] = { thresholds: [{ priority: 'DEFAULT', max_requests: { value: limits.maxRequests } }] };
    breakers.applied('connectionLimits.maxRequests', 'CircuitBreakers.thresholds.max_requests: over it an RPC fails UNAVAILABLE, not retried', 1024);
    for (const limit of ['maxConnections', 'maxPendingRequests', 'maxRetries']) breakers.notApplied(`connectionLimits.${limit}`, GRPC_LIMITS);
  }

  const outlier = outlierDetection(client, ops.circuitBreaker.conf, breakers);
  if (outlier !== undefined) fields['outlier_detection'] = outlier;
  if (client === 'envoy' && (protocol === 'http2' || protocol === 'grpc')) {
    // Envoy speaks HTTP/1.1 upstream by default, which a gRPC server refuses.
    fields['typed_extension_protocol_options'] = {
      [HTTP_PROTOCOL_OPTIONS]: anyOf(HTTP_PROTOCOL_OPTIONS, { explicit_http_config: { http2_protocol_options: {} } }),
    };
  }
  return Object.freeze({
    fields: Object.freeze(fields),
    explained: Object.freeze([...timeouts.rows, ...breakers.rows]),
    key: JSON.stringify([client, protocol, fields['connect_timeout'], limits, client === 'envoy' ? ops.circuitBreaker.conf.outlierDetection : outlier]),
  });
}

/**
 * Outlier detection as each client honours it. Envoy: every detector Kuma has, each enforced
 * only when configured (Kuma: unset detectors get `enforcing_*: 0`, where Envoy would enforce
 * consecutive 5xx by default). gRPC (A50): success rate and failure percentage only; it ignores
 * consecutive failures, and would enforce success rate unless told 0, so both are explicit.
 */
function outlierDetection(client: ClientKind, conf: CircuitBreakerConf, rows: FieldRows): object | undefined {
  const outlier = conf.outlierDetection;
  if (outlier === undefined) {
    rows.rows.push({ policy: 'MeshCircuitBreaker', field: 'outlierDetection', value: 'off', lost: [], as: 'no outlier_detection: no endpoint is ejected' });
    return undefined;
  }
  const detectors = outlier.detectors ?? {};
  const { successRate, failurePercentage, totalFailures, gatewayFailures } = detectors;
  const common = {
    ...(outlier.interval !== undefined && { interval: protoDuration(outlier.interval) }),
    ...(outlier.baseEjectionTime !== undefined && { base_ejection_time: protoDuration(outlier.baseEjectionTime) }),
    ...(outlier.maxEjectionPercent !== undefined && { max_ejection_percent: { value: outlier.maxEjectionPercent } }),
    enforcing_success_rate: { value: successRate === undefined ? 0 : 100 },
    ...(successRate?.minimumHosts !== undefined && { success_rate_minimum_hosts: { value: successRate.minimumHosts } }),
    ...(successRate?.requestVolume !== undefined && { success_rate_request_volume: { value: successRate.requestVolume } }),
    ...(successRate?.standardDeviationFactor !== undefined && { success_rate_stdev_factor: { value: Math.round(successRate.standardDeviationFactor * 1_000) } }),
    enforcing_failure_percentage: { value: failurePercentage === undefined ? 0 : 100 },
    ...(failurePercentage?.threshold !== undefined && { failure_percentage_threshold: { value: failurePercentage.threshold } }),
    ...(failurePercentage?.minimumHosts !== undefined && { failure_percentage_minimum_hosts: { value: failurePercentage.minimumHosts } }),
    ...(failurePercentage?.requestVolume !== undefined && { failure_percentage_request_volume: { value: failurePercentage.requestVolume } }),
  };
  const honoured = client === 'envoy' || successRate !== undefined || failurePercentage !== undefined;
  if (!honoured) {
    rows.notApplied('outlierDetection', 'gRPC ejects only by success rate or failure percentage (A50), and neither detector is set');
    return undefined;
  }
  rows.applied('outlierDetection.interval', 'OutlierDetection.interval', '10s');
  rows.applied('outlierDetection.baseEjectionTime', 'OutlierDetection.base_ejection_time', '30s');
  rows.applied('outlierDetection.maxEjectionPercent', 'OutlierDetection.max_ejection_percent', 10);
  if (client === 'grpc') rows.notApplied('outlierDetection.detectors.totalFailures', 'gRPC ignores consecutive 5xx (A50)');
  if (client === 'grpc') rows.notApplied('outlierDetection.detectors.gatewayFailures', 'gRPC ignores consecutive gateway failures (A50)');
  if (client === 'envoy') {
    rows.applied('outlierDetection.detectors.totalFailures.consecutive', 'OutlierDetection.consecutive_5xx', totalFailures === undefined ? undefined : 5);
    rows.applied('outlierDetection.detectors.gatewayFailures.consecutive', 'OutlierDetection.consecutive_gateway_failure', gatewayFailures === undefined ? undefined : 5);
  }
  for (const [field, as] of [
    ['successRate.minimumHosts', 'success_rate_minimum_hosts'],
    ['successRate.requestVolume', 'success_rate_request_volume'],
    ['successRate.standardDeviationFactor', 'success_rate_stdev_factor (× 1000)'],
    ['failurePercentage.threshold', 'failure_percentage_threshold'],
    ['failurePercentage.minimumHosts', 'failure_percentage_minimum_hosts'],
    ['failurePercentage.requestVolume', 'failure_percentage_request_volume'],
  ] as const) {
    rows.applied(`outlierDetection.detectors.${field}`, `OutlierDetection.${as}`);
  }
  if (client === 'grpc') return common;
  return {
    ...common,
    enforcing_consecutive_5xx: { value: totalFailures === undefined ? 0 : 100 },
    ...(totalFailures?.consecutive !== undefined && { consecutive_5xx: { value: totalFailures.consecutive } }),
    enforcing_consecutive_gateway_failure: { value: gatewayFailures === undefined ? 0 : 100 },
    ...(gatewayFailures?.consecutive !== undefined && { consecutive_gateway_failure: { value: gatewayFailures.consecutive } }),
  };
}
