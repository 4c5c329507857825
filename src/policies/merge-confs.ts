import type { PolicyType } from './policy-resources.js';

/** A policy, as an explanation names it. */
export interface PolicyRef {
  readonly type: PolicyType;
  readonly name: string;
}

/** One field of an effective configuration: its value, the policy that set it, and those that set it too but lost on precedence. */
export interface FieldSource {
  /** Dotted, as written in the policy's `default`: `http.requestTimeout`. */
  readonly path: string;
  readonly value: unknown;
  readonly from: PolicyRef;
  /** Strongest first: the runner-up leads. */
  readonly lost: readonly PolicyRef[];
}

/** Several policies' configurations of the same calls, merged. */
export interface Merged<T> {
  readonly conf: T;
  /** Each field some policy set, sorted by path; a field no policy set keeps the client's default. */
  readonly fields: readonly FieldSource[];
}

/**
 * Merges configurations given weakest first (precedence.ts) as Kuma does (MADR 017): objects
 * field by field, so a stronger policy overrides only what it sets; lists and values replaced
 * whole. Records, per field, the policy whose value stands and the policies whose values it
 * replaced.
 */
export function mergeConfs<T extends object>(entries: ReadonlyArray<{ readonly policy: PolicyRef; readonly conf: T }>): Merged<T> {
  const conf: Record<string, unknown> = {};
  const sources = new Map<string, { from: PolicyRef; lost: PolicyRef[]; value: unknown }>();
  for (const { policy, conf: each } of entries) mergeInto(conf, each as Record<string, unknown>, '', policy, sources);
  const fields = [...sources]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([path, { from, lost, value }]) => Object.freeze({ path, value, from, lost: Object.freeze(lost) }));
  return Object.freeze({ conf: deepFreeze(conf) as T, fields: Object.freeze(fields) });
}

function mergeInto(
  target: Record<string, unknown>,
  source: Readonly<Record<string, unknown>>,
  prefix: string,
  policy: PolicyRef,
  sources: Map<string, { from: PolicyRef; lost: PolicyRef[]; value: unknown }>,
): void {
  for (const key of Object.keys(source)) {
    const value = source[key];
    const path = prefix === '' ? key : `${prefix}.${key}`;
    if (isObject(value)) {
      const nested = isObject(target[key]) ? (target[key] as Record<string, unknown>) : (target[key] = {});
      mergeInto(nested as Record<string, unknown>, value, path, policy, sources);
      continue;
    }
    // An empty list is "not written" (proto3 keeps no presence for lists): the default stands.
    if (Array.isArray(value) && value.length === 0) continue;
    target[key] = value;
    const before = sources.get(path);
    const lost = before === undefined ? [] : [before.from, ...before.lost].filter((ref) => !sameRef(ref, policy));
    sources.set(path, { from: policy, lost: dedupe(lost), value });
  }
}

function isObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function sameRef(a: PolicyRef, b: PolicyRef): boolean {
  return a.type === b.type && a.name === b.name;
}

function dedupe(refs: readonly PolicyRef[]): PolicyRef[] {
  return refs.filter((ref, i) => refs.findIndex((other) => sameRef(other, ref)) === i);
}

function deepFreeze(value: Record<string, unknown>): Record<string, unknown> {
  for (const key in value) if (isObject(value[key])) deepFreeze(value[key] as Record<string, unknown>);
  return Object.freeze(value);
}
