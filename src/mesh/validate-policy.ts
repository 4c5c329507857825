import { fieldPath, textProblem } from '../common/index.js';
import {
  BACKEND_REF_KINDS,
  DURATION_RULE,
  GRPC_RETRY_ON,
  HEADER_MATCH_TYPES,
  HTTP_RETRY_ON,
  MAX_DURATION_MS,
  parseDuration,
  PATH_MATCH_TYPES,
  TO_TARGET_KINDS,
  TOP_TARGET_KINDS,
  type BackendRef,
  type CircuitBreakerConf,
  type HttpMatch,
  type HttpRule,
  type Policy,
  type PolicyType,
  type RetryConf,
  type RetrySettings,
  type Tags,
  type TargetRef,
  type TimeoutConf,
} from '../policies/index.js';
import { RESOURCE_LIMITS } from './limits.js';
import type { Valid } from './resources.js';
import { Issues, readLabel, readList, readObject, rejectUnknown, type Fields } from './validation-readers.js';

/**
 * Validation of the four traffic policies, in Kuma's universal format (reference/traffic-policies.md
 * §3): exactly the fields Chancery applies, each checked (a duration, a count in range, a known
 * retry condition), every issue named by its path (`spec.to[0].default.http.numRetries`).
 * Unknown fields are refused, as everywhere: a Kuma field Chancery does not apply (`from`,
 * `filters`, `hostnames`) is an error, never a policy silently half-applied.
 */

/** Bounds on a policy's lists, so a write costs a known amount (issue 11). */
const POLICY_LIMITS = { to: 64, rules: 64, matches: 16, headers: 16, backendRefs: 16, retryOn: 16, count: 1_000_000, retries: 1_000 } as const;

const HTTP_STATUS = /^[1-5]\d\d$/;
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'];
// RFC 9110 `token`: what a header name may be.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$/;

export function readPolicy(fields: Fields, issues: Issues): Valid<Policy> | undefined {
  const type = fields.type as PolicyType;
  rejectUnknown(fields, ['type', 'mesh', 'name', 'spec'], '', `a ${type}`, issues);
  const mesh = readLabel(fields.mesh, 'mesh', issues);
  const name = readLabel(fields.name, 'name', issues);
  const spec = readSpec(type, fields.spec, issues);
  if (mesh === undefined || name === undefined || spec === undefined || issues.count > 0) return undefined;
  const policy = { type, mesh, name, spec } as Policy;
  const bytes = Buffer.byteLength(JSON.stringify(policy));
  if (bytes > RESOURCE_LIMITS.resourceBytes) {
    return issues.add('', `is ${bytes} bytes as JSON; a ${type} may have at most ${RESOURCE_LIMITS.resourceBytes}`);
  }
  return Object.freeze(policy) as Valid<Policy>;
}

function readSpec(type: PolicyType, value: unknown, issues: Issues): Policy['spec'] | undefined {
  const fields = readObject(value, 'spec', issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, ['targetRef', 'to'], 'spec', `a ${type}'s spec`, issues);
  const targetRef = readTargetRef(fields.targetRef, 'spec.targetRef', TOP_TARGET_KINDS, issues);
  const readEntry = type === 'MeshHTTPRoute' ? readRouteEntry : (item: unknown, path: string, each: Issues) => readToEntry(type, item, path, each);
  const to = readSomeOf(fields.to, 'spec.to', POLICY_LIMITS.to, issues, readEntry, 'entry: the services whose calls the policy configures');
  if (targetRef === undefined || to === undefined || issues.count > before) return undefined;
  return Object.freeze({ targetRef, to }) as Policy['spec'];
}

function readToEntry(type: Exclude<PolicyType, 'MeshHTTPRoute'>, value: unknown, path: string, issues: Issues): object | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, ['targetRef', 'default'], path, `an entry of a ${type}'s to`, issues);
  const targetRef = readTargetRef(fields.targetRef, `${path}.targetRef`, TO_TARGET_KINDS, issues);
  const conf = CONF_READERS[type](fields.default, `${path}.default`, issues);
  if (targetRef === undefined || conf === undefined || issues.count > before) return undefined;
  return Object.freeze({ targetRef, default: conf });
}

const CONF_READERS: Readonly<Record<Exclude<PolicyType, 'MeshHTTPRoute'>, (value: unknown, path: string, issues: Issues) => object | undefined>> = {
  MeshTimeout: readTimeoutConf,
  MeshRetry: readRetryConf,
  MeshCircuitBreaker: readCircuitBreakerConf,
};

/**
 * A `targetRef`: `kind` one of `kinds`, with a `name` for a MeshService and non-empty `tags`
 * for a MeshSubset, and nothing else. Read into one shape: `{ kind, name?, tags }`.
 */
function readTargetRef<K extends string>(value: unknown, path: string, kinds: readonly K[], issues: Issues): TargetRef<K> | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, ['kind', 'name', 'tags'], path, 'a targetRef', issues);
  const kind = readChoice(fields.kind, `${path}.kind`, kinds, issues);
  if (kind === undefined) return undefined;
  if (kind !== 'MeshService' && fields.name !== undefined) issues.add(`${path}.name`, `a ${kind} targetRef takes no name`);
  if (kind !== 'MeshSubset' && fields.tags !== undefined) issues.add(`${path}.tags`, `a ${kind} targetRef takes no tags`);
  if (kind === 'MeshService') {
    const name = readLabel(fields.name, `${path}.name`, issues);
    return name === undefined || issues.count > before ? undefined : Object.freeze({ kind, name, tags: EMPTY_TAGS });
  }
  const tags = kind === 'MeshSubset' ? readTags(fields.tags, `${path}.tags`, true, issues) : EMPTY_TAGS;
  return tags === undefined || issues.count > before ? undefined : Object.freeze({ kind, tags });
}

const EMPTY_TAGS: Tags = Object.freeze({});

/** Tags to select by: keys and values storable text, sorted; at least one when `required`. */
function readTags(value: unknown, path: string, required: boolean, issues: Issues): Tags | undefined {
  if (value === undefined && !required) return EMPTY_TAGS;
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const keys = Object.keys(fields).sort();
  if (required && keys.length === 0) return issues.add(path, 'must have at least one tag');
  if (keys.length > RESOURCE_LIMITS.tags) return issues.add(path, `must have at most ${RESOURCE_LIMITS.tags} tags; it has ${keys.length}`);
  const before = issues.count;
  const tags: Array<[string, string]> = [];
  for (const key of keys) {
    const keyProblem = key === '' ? 'must not be empty' : textProblem(key, RESOURCE_LIMITS.tagKeyLength);
    const tag = fields[key];
    if (keyProblem !== undefined) issues.add(fieldPath(path, key), `the tag key ${keyProblem}`);
    else if (typeof tag !== 'string') issues.add(fieldPath(path, key), 'must be a string');
    else {
      const problem = textProblem(tag, RESOURCE_LIMITS.tagValueLength);
      if (problem === undefined) tags.push([key, tag]);
      else issues.add(fieldPath(path, key), problem);
    }
  }
  return issues.count > before ? undefined : Object.freeze(Object.fromEntries(tags));
}

function readTimeoutConf(value: unknown, path: string, issues: Issues): TimeoutConf | undefined {
  return readConf(value, path, issues, 'a MeshTimeout default', {
    connectionTimeout: (v, p) => readDuration(v, p, issues, { positive: true }),
    idleTimeout: (v, p) => readDuration(v, p, issues),
    http: (v, p) =>
      readConf(v, p, issues, 'http', {
        requestTimeout: (d, q) => readDuration(d, q, issues),
        streamIdleTimeout: (d, q) => readDuration(d, q, issues),
        maxStreamDuration: (d, q) => readDuration(d, q, issues),
      }),
  });
}

function readRetryConf(value: unknown, path: string, issues: Issues): RetryConf | undefined {
  return readConf<RetryConf>(value, path, issues, 'a MeshRetry default', {
    http: (v, p) => readRetrySettings(v, p, 'http', issues),
    grpc: (v, p) => readRetrySettings(v, p, 'grpc', issues),
  });
}

function readRetrySettings(value: unknown, path: string, protocol: 'http' | 'grpc', issues: Issues): RetrySettings | undefined {
  const before = issues.count;
  const settings = readConf<Omit<RetrySettings, 'retryOn'> & { retryOn?: readonly string[] }>(value, path, issues, `${protocol} retries`, {
    numRetries: (v, p) => readCount(v, p, issues, 0, POLICY_LIMITS.retries),
    perTryTimeout: (v, p) => readDuration(v, p, issues),
    backOff: (v, p) =>
      readConf(v, p, issues, 'backOff', {
        baseInterval: (d, q) => readDuration(d, q, issues, { positive: true }),
        maxInterval: (d, q) => readDuration(d, q, issues, { positive: true }),
      }),
    retryOn: (v, p) => readRetryOn(v, p, protocol, issues),
  });
  if (settings === undefined) return undefined;
  const { baseInterval, maxInterval } = settings.backOff ?? {};
  if (baseInterval !== undefined && maxInterval !== undefined && parseDuration(maxInterval)! < parseDuration(baseInterval)!) {
    issues.add(`${path}.backOff.maxInterval`, `must be at least baseInterval (${baseInterval})`);
  }
  if (issues.count > before) return undefined;
  return Object.freeze({ ...settings, retryOn: settings.retryOn ?? Object.freeze([]) });
}

function readRetryOn(value: unknown, path: string, protocol: 'http' | 'grpc', issues: Issues): readonly string[] | undefined {
  const http = protocol === 'http';
  const known: readonly string[] = http ? HTTP_RETRY_ON : GRPC_RETRY_ON;
  const list = readList(value, path, POLICY_LIMITS.retryOn, issues, (item, itemPath) => {
    if (typeof item === 'string' && (known.includes(item) || (http && HTTP_STATUS.test(item)))) return item;
    return issues.add(itemPath, `must be one of ${known.map((each) => `"${each}"`).join(', ')}${http ? ', or an HTTP status such as "503"' : ''}`);
  });
  if (list !== undefined && list.length === 0) return issues.add(path, 'must have at least one entry; leave it out for the default conditions');
  return list;
}

function readCircuitBreakerConf(value: unknown, path: string, issues: Issues): CircuitBreakerConf | undefined {
  const count = (v: unknown, p: string) => readCount(v, p, issues, 1, POLICY_LIMITS.count);
  const percent = (v: unknown, p: string) => readCount(v, p, issues, 0, 100);
  return readConf(value, path, issues, 'a MeshCircuitBreaker default', {
    connectionLimits: (v, p) =>
      readConf(v, p, issues, 'connectionLimits', { maxConnections: count, maxPendingRequests: count, maxRequests: count, maxRetries: count }),
    outlierDetection: (v, p) =>
      readConf(v, p, issues, 'outlierDetection', {
        interval: (d, q) => readDuration(d, q, issues, { positive: true }),
        baseEjectionTime: (d, q) => readDuration(d, q, issues, { positive: true }),
        maxEjectionPercent: percent,
        detectors: (d, q) =>
          readConf(d, q, issues, 'detectors', {
            totalFailures: (f, r) => readConf(f, r, issues, 'totalFailures', { consecutive: count }),
            gatewayFailures: (f, r) => readConf(f, r, issues, 'gatewayFailures', { consecutive: count }),
            failurePercentage: (f, r) =>
              readConf(f, r, issues, 'failurePercentage', { requestVolume: count, minimumHosts: count, threshold: percent }),
            successRate: (f, r) =>
              readConf(f, r, issues, 'successRate', {
                requestVolume: count,
                minimumHosts: count,
                standardDeviationFactor: (g, s) => readFactor(g, s, issues),
              }),
          }),
      }),
  });
}

function readRouteEntry(value: unknown, path: string, issues: Issues): object | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, ['targetRef', 'rules'], path, "an entry of a MeshHTTPRoute's to", issues);
  // A route replaces how one service is reached, so it names the service (as Kuma requires).
  const targetRef = readTargetRef(fields.targetRef, `${path}.targetRef`, ['MeshService'] as const, issues);
  const rules = readSomeOf(fields.rules, `${path}.rules`, POLICY_LIMITS.rules, issues, readRule, 'rule');
  if (targetRef === undefined || rules === undefined || issues.count > before) return undefined;
  return Object.freeze({ targetRef, rules });
}

function readRule(value: unknown, path: string, issues: Issues): HttpRule | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, ['matches', 'default'], path, 'a rule', issues);
  const matches = readSomeOf(fields.matches, `${path}.matches`, POLICY_LIMITS.matches, issues, readMatch, 'match');
  const conf = readObject(fields.default, `${path}.default`, issues);
  let backendRefs: readonly BackendRef[] | undefined;
  if (conf !== undefined) {
    rejectUnknown(conf, ['backendRefs'], `${path}.default`, "a rule's default", issues);
    backendRefs = readList(conf.backendRefs, `${path}.default.backendRefs`, POLICY_LIMITS.backendRefs, issues, readBackendRef);
    if (backendRefs !== undefined && backendRefs.length > 0 && backendRefs.every((ref) => ref.weight === 0)) {
      issues.add(`${path}.default.backendRefs`, 'must give at least one backendRef a weight above 0');
    }
  }
  if (matches === undefined || backendRefs === undefined || issues.count > before) return undefined;
  return Object.freeze({ matches, default: Object.freeze({ backendRefs }) });
}

function readMatch(value: unknown, path: string, issues: Issues): HttpMatch | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, ['path', 'method', 'headers'], path, 'a match', issues);
  let matchPath: HttpMatch['path'];
  const pathFields = fields.path === undefined ? undefined : readObject(fields.path, `${path}.path`, issues);
  if (pathFields !== undefined) {
    rejectUnknown(pathFields, ['type', 'value'], `${path}.path`, 'a path match', issues);
    const type = readChoice(pathFields.type, `${path}.path.type`, PATH_MATCH_TYPES, issues);
    const text = readText(pathFields.value, `${path}.path.value`, 1_024, issues);
    if (text !== undefined && !text.startsWith('/')) issues.add(`${path}.path.value`, 'must start with /');
    else if (text !== undefined && /[?#]/.test(text)) issues.add(`${path}.path.value`, 'must be a path, without ? or #');
    if (type !== undefined && text !== undefined) matchPath = Object.freeze({ type, value: text });
  }
  let method: string | undefined;
  if (fields.method !== undefined) method = readChoice(fields.method, `${path}.method`, METHODS, issues);
  const headers = readList(fields.headers, `${path}.headers`, POLICY_LIMITS.headers, issues, readHeaderMatch);
  if (headers === undefined || issues.count > before) return undefined;
  return Object.freeze({ ...(matchPath !== undefined && { path: matchPath }), ...(method !== undefined && { method }), headers });
}

function readHeaderMatch(value: unknown, path: string, issues: Issues): HttpMatch['headers'][number] | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, ['type', 'name', 'value'], path, 'a header match', issues);
  // Kuma's default type is Exact.
  const type = fields.type === undefined ? 'Exact' : readChoice(fields.type, `${path}.type`, HEADER_MATCH_TYPES, issues);
  const name = readText(fields.name, `${path}.name`, 256, issues);
  if (name !== undefined && !HEADER_NAME.test(name)) issues.add(`${path}.name`, 'must be an HTTP header name');
  if (type === 'Present' && fields.value !== undefined) issues.add(`${path}.value`, 'a Present match takes no value');
  const text = type === 'Exact' ? readText(fields.value, `${path}.value`, 4_096, issues, true) : undefined;
  if (type === undefined || name === undefined || issues.count > before) return undefined;
  return Object.freeze({ type, name, ...(text !== undefined && { value: text }) });
}

function readBackendRef(value: unknown, path: string, issues: Issues): BackendRef | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, ['kind', 'name', 'tags', 'weight'], path, 'a backendRef', issues);
  const kind = readChoice(fields.kind, `${path}.kind`, BACKEND_REF_KINDS, issues);
  const name = readLabel(fields.name, `${path}.name`, issues);
  if (kind === 'MeshService' && fields.tags !== undefined) issues.add(`${path}.tags`, 'a MeshService backendRef takes no tags; a MeshServiceSubset does');
  const tags = kind === 'MeshServiceSubset' ? readTags(fields.tags, `${path}.tags`, true, issues) : EMPTY_TAGS;
  // Kuma's default weight.
  const weight = fields.weight === undefined ? 1 : readCount(fields.weight, `${path}.weight`, issues, 0, POLICY_LIMITS.count);
  if (kind === undefined || name === undefined || tags === undefined || weight === undefined || issues.count > before) return undefined;
  return Object.freeze({ kind, name, tags, weight });
}

/** A required list of at least one `what`. */
function readSomeOf<T>(
  value: unknown,
  path: string,
  max: number,
  issues: Issues,
  readItem: (item: unknown, path: string, issues: Issues) => T | undefined,
  what: string,
): readonly T[] | undefined {
  if (value === undefined) return issues.add(path, `is required: at least one ${what}`);
  const list = readList(value, path, max, issues, readItem);
  if (list !== undefined && list.length === 0) return issues.add(path, `must have at least one ${what}`);
  return list;
}

/** Reads an object of optional fields, each with its own reader; unknown fields are refused. */
function readConf<T extends object>(
  value: unknown,
  path: string,
  issues: Issues,
  what: string,
  readers: { readonly [K in keyof T]-?: (value: unknown, path: string) => T[K] | undefined },
): T | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  const known = Object.keys(readers);
  rejectUnknown(fields, known, path, what, issues);
  const read: Record<string, unknown> = {};
  for (const key of known) {
    if (fields[key] === undefined) continue;
    const each = (readers as Record<string, (value: unknown, path: string) => unknown>)[key]!(fields[key], fieldPath(path, key));
    if (each !== undefined) read[key] = each;
  }
  return issues.count > before ? undefined : (Object.freeze(read) as T);
}

function readDuration(value: unknown, path: string, issues: Issues, { positive = false } = {}): string | undefined {
  if (typeof value !== 'string') return issues.add(path, `must be a string; ${DURATION_RULE}`);
  const ms = parseDuration(value);
  if (ms === undefined) return issues.add(path, DURATION_RULE);
  if (ms > MAX_DURATION_MS) return issues.add(path, 'must be at most 10,000 years');
  if (positive && ms < 1) return issues.add(path, 'must be at least 1ms');
  return value;
}

function readCount(value: unknown, path: string, issues: Issues, min: number, max: number): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return value;
  return issues.add(path, `must be an integer from ${min} to ${max}`);
}

/** Kuma writes the success-rate factor as a number or a numeric string (`"1.9"`). */
function readFactor(value: unknown, path: string, issues: Issues): number | undefined {
  const number = typeof value === 'string' && /^\d{1,6}(\.\d{1,3})?$/.test(value) ? Number(value) : value;
  if (typeof number === 'number' && Number.isFinite(number) && number > 0 && number <= 1_000) return number;
  return issues.add(path, 'must be a number above 0 and at most 1000, such as 1.9');
}

function readChoice<K extends string>(value: unknown, path: string, choices: readonly K[], issues: Issues): K | undefined {
  if (value === undefined) return issues.add(path, 'is required');
  if (typeof value === 'string' && (choices as readonly string[]).includes(value)) return value as K;
  return issues.add(path, `must be one of ${choices.map((choice) => `"${choice}"`).join(', ')}`);
}

function readText(value: unknown, path: string, max: number, issues: Issues, emptyAllowed = false): string | undefined {
  if (value === undefined) return issues.add(path, 'is required');
  if (typeof value !== 'string') return issues.add(path, 'must be a string');
  if (value === '' && !emptyAllowed) return issues.add(path, 'must not be empty');
  const problem = textProblem(value, max);
  return problem === undefined ? value : issues.add(path, problem);
}

