import { compareText } from '../common/index.js';
import { effectiveRoutes, type EffectiveRoute } from './http-route-rules.js';
import { mergeConfs, type Merged, type PolicyRef } from './merge-confs.js';
import { comparePrecedence } from './precedence.js';
import type { CircuitBreakerConf, HttpRule, Policy, PolicyType, RetryConf, TimeoutConf } from './policy-resources.js';
import { appliesTo, selects, tagsRead, type Selectable } from './target-refs.js';

/** What the policies of a dataplane say about its calls to one service. */
export interface OutboundPolicies {
  readonly service: string;
  readonly timeout: Merged<TimeoutConf>;
  readonly retry: Merged<RetryConf>;
  readonly circuitBreaker: Merged<CircuitBreakerConf>;
  readonly routes: readonly EffectiveRoute[];
  /** Every policy with an entry for these calls, in precedence order, strongest first. */
  readonly policies: readonly PolicyRef[];
  /** Equal keys, equal configuration (where each field came from aside): what renderings are memoised on. */
  readonly key: string;
}

/**
 * The policies of one mesh at one revision, ready to be matched: built once per policies map
 * (the projection keeps one object while no policy changes), shared by every node of the mesh.
 * Pure: a function of the policies alone (I9), no clock, no I/O.
 */
export class MeshPolicies {
  static readonly #built = new WeakMap<object, MeshPolicies>();

  /** Every policy, sorted by type then name. */
  readonly all: readonly Policy[];
  readonly #selections = new Map<string, PolicySelection>();
  /** The tags matching reads of a dataplane's inbounds, sorted: the `service` tag, and those MeshSubsets name. */
  readonly #tagKeys: readonly string[];
  /**
   * By the values of those tags (`#tagsText`): matched once per combination, not again for each
   * of the many dataplanes that share it, and no more entries than the policies tell apart.
   */
  readonly #byTags = new Map<string, PolicySelection>();
  /** By dataplane (a stored Dataplane's `networking`, one object while it is unchanged): looked up once, not at every generation. */
  readonly #selected = new WeakMap<Selectable, PolicySelection>();

  private constructor(all: readonly Policy[]) {
    this.all = all;
    this.#tagKeys = [...new Set(all.flatMap((policy) => tagsRead(policy.spec.targetRef)))].sort();
  }

  /**
   * The matcher of a mesh's policies map, built once per map object. A mesh without policies
   * gets one per `scope` (its stored Mesh, one object until the Mesh is written): what it caches
   * per service goes with it, and its selections stay the same objects from one mesh state to
   * the next, as a policies map's do.
   */
  static of(policies: ReadonlyMap<string, { readonly resource: Policy }> | undefined, scope: object): MeshPolicies {
    const key = policies === undefined || policies.size === 0 ? scope : policies;
    let built = MeshPolicies.#built.get(key);
    if (built === undefined) {
      const all = [...(policies?.values() ?? [])].map(({ resource }) => resource);
      all.sort((a, b) => compareText(a.type, b.type) || compareText(a.name, b.name));
      built = new MeshPolicies(Object.freeze(all));
      MeshPolicies.#built.set(key, built);
    }
    return built;
  }

  /**
   * The policies whose top-level targetRef selects `dataplane`. Dataplanes selected by the same
   * policies share one selection, and with it every effective configuration derived from it.
   */
  select(dataplane: Selectable): PolicySelection {
    let selection = this.#selected.get(dataplane);
    if (selection !== undefined) return selection;
    const tags = this.#tagsText(dataplane);
    selection = this.#byTags.get(tags);
    if (selection === undefined) {
      selection = this.#match(dataplane);
      this.#byTags.set(tags, selection);
    }
    this.#selected.set(dataplane, selection);
    return selection;
  }

  /** The values of `#tagKeys` on each inbound of `dataplane`, as text: equal texts, the same policies select them. */
  #tagsText(dataplane: Selectable): string {
    if (this.#tagKeys.length === 0) return '';
    return JSON.stringify(dataplane.inbound.map(({ tags }) => this.#tagKeys.map((key) => tags[key] ?? null)));
  }

  #match(dataplane: Selectable): PolicySelection {
    let key = '';
    const selected: Policy[] = [];
    for (const policy of this.all) {
      if (!selects(policy.spec.targetRef, dataplane)) continue;
      selected.push(policy);
      key += `${policy.type}/${policy.name}\n`;
    }
    let selection = this.#selections.get(key);
    if (selection === undefined) {
      selection = new PolicySelection(key, Object.freeze(selected));
      this.#selections.set(key, selection);
    }
    return selection;
  }
}

/** The policies selecting some dataplanes, and what they configure for each service those call. */
export class PolicySelection {
  readonly #outbounds = new Map<string, OutboundPolicies>();

  constructor(
    /** Equal for dataplanes selected by the same policies. */
    readonly key: string,
    /** Sorted by type then name. */
    readonly policies: readonly Policy[],
  ) {}

  get empty(): boolean {
    return this.policies.length === 0;
  }

  /** The effective configuration of calls to `service`: each policy type's entries merged in precedence order. */
  outbound(service: string): OutboundPolicies {
    let outbound = this.#outbounds.get(service);
    if (outbound === undefined) {
      outbound = effectiveOutbound(this.policies, service);
      this.#outbounds.set(service, outbound);
    }
    return outbound;
  }
}

interface Entry<T> {
  readonly policy: PolicyRef;
  readonly topKind: Policy['spec']['targetRef']['kind'];
  readonly toKind: 'Mesh' | 'MeshService';
  readonly name: string;
  readonly value: T;
}

function effectiveOutbound(policies: readonly Policy[], service: string): OutboundPolicies {
  const timeout = mergeConfs(entriesOf<TimeoutConf>(policies, 'MeshTimeout', service).map(({ policy, value }) => ({ policy, conf: value })));
  const retry = mergeConfs(entriesOf<RetryConf>(policies, 'MeshRetry', service).map(({ policy, value }) => ({ policy, conf: value })));
  const circuitBreaker = mergeConfs(
    entriesOf<CircuitBreakerConf>(policies, 'MeshCircuitBreaker', service).map(({ policy, value }) => ({ policy, conf: value })),
  );
  const routes = effectiveRoutes(
    entriesOf<readonly HttpRule[]>(policies, 'MeshHTTPRoute', service).flatMap(({ policy, value }) => value.map((rule) => ({ policy, rule }))),
  );
  const contributing = new Map<string, PolicyRef & { readonly rank: Entry<unknown> }>();
  for (const type of ['MeshHTTPRoute', 'MeshTimeout', 'MeshRetry', 'MeshCircuitBreaker'] as const) {
    for (const entry of entriesOf<unknown>(policies, type, service)) contributing.set(`${type}/${entry.name}`, { ...entry.policy, rank: entry });
  }
  const ordered = [...contributing.values()].sort((a, b) => comparePrecedence(b.rank, a.rank) || compareText(a.type, b.type));
  return Object.freeze({
    service,
    timeout,
    retry,
    circuitBreaker,
    routes,
    policies: Object.freeze(ordered.map(({ type, name }) => Object.freeze({ type, name }))),
    key: JSON.stringify([timeout.conf, retry.conf, circuitBreaker.conf, routes.map(({ match, backendRefs }) => [match, backendRefs])]),
  });
}

/** The entries of policies of `type` that configure calls to `service`, weakest first. */
function entriesOf<T>(policies: readonly Policy[], type: PolicyType, service: string): Entry<T>[] {
  const entries: Entry<T>[] = [];
  for (const policy of policies) {
    if (policy.type !== type) continue;
    const ref = Object.freeze({ type: policy.type, name: policy.name });
    for (const entry of policy.spec.to) {
      if (!appliesTo(entry.targetRef, service)) continue;
      const value = ('rules' in entry ? entry.rules : entry.default) as T;
      entries.push({ policy: ref, topKind: policy.spec.targetRef.kind, toKind: entry.targetRef.kind, name: policy.name, value });
    }
  }
  // Stable: one policy's entries keep their order in `to[]`.
  return entries.sort(comparePrecedence);
}
