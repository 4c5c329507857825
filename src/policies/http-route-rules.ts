import type { PolicyRef } from './merge-confs.js';
import type { BackendRef, HttpMatch, HttpRule } from './policy-resources.js';

/** One route of an outbound's effective routing: one match of one rule, and where its requests go. */
export interface EffectiveRoute {
  readonly match: HttpMatch;
  /** Empty: to the service the outbound calls. */
  readonly backendRefs: readonly BackendRef[];
  readonly from: PolicyRef;
  /** Policies with a rule of the same matches that this one's replaced, strongest first. */
  readonly lost: readonly PolicyRef[];
}

/**
 * The routes of every MeshHTTPRoute rule that configures one outbound, given weakest first
 * (precedence.ts). As Kuma merges them: rules are keyed by their `matches`, and a stronger
 * policy's rule with the same matches replaces the weaker one's; rules with other matches all
 * stand. Each match of a rule becomes a route, and routes are ordered most specific first
 * (Gateway API's order, as Kuma's): an exact path before a prefix, a longer prefix before a
 * shorter, a method before none, more headers before fewer; ties go to the stronger policy.
 * The catch-all route to the service itself is the renderer's, after these.
 */
export function effectiveRoutes(rules: ReadonlyArray<{ readonly policy: PolicyRef; readonly rule: HttpRule }>): readonly EffectiveRoute[] {
  const byMatches = new Map<string, { policy: PolicyRef; rule: HttpRule; lost: PolicyRef[]; strength: number }>();
  rules.forEach(({ policy, rule }, strength) => {
    const key = JSON.stringify(rule.matches);
    const before = byMatches.get(key);
    const lost = before === undefined ? [] : [before.policy, ...before.lost].filter((ref) => ref.name !== policy.name || ref.type !== policy.type);
    byMatches.set(key, { policy, rule, lost, strength });
  });
  const routes: Array<EffectiveRoute & { readonly strength: number }> = [];
  for (const { policy, rule, lost, strength } of byMatches.values()) {
    for (const match of rule.matches) {
      routes.push({ match, backendRefs: rule.default.backendRefs, from: policy, lost: Object.freeze(lost), strength });
    }
  }
  routes.sort((a, b) => compareSpecificity(a.match, b.match) || b.strength - a.strength);
  return Object.freeze(routes.map(({ strength: _strength, ...route }) => Object.freeze(route)));
}

/** Negative when `a` is more specific than `b`, so sorts first. */
function compareSpecificity(a: HttpMatch, b: HttpMatch): number {
  return pathRank(b) - pathRank(a) || Number(b.method !== undefined) - Number(a.method !== undefined) || b.headers.length - a.headers.length;
}

/** An exact path outranks every prefix; a prefix outranks a shorter one; no path is the prefix `/`. */
function pathRank(match: HttpMatch): number {
  const path = match.path;
  if (path === undefined) return 1;
  return path.type === 'Exact' ? Number.MAX_SAFE_INTEGER : path.value.length;
}
