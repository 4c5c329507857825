import { describe, expect, it } from 'vitest';
import { validate } from '../../src/mesh/validate.js';
import {
  comparePrecedence,
  MeshPolicies,
  type EffectiveRoute,
  type FieldSource,
  type Policy,
  type Ranked,
} from '../../src/policies/index.js';
import { EXPECTED_RETRIES, EXPECTED_ROUTES, EXPECTED_TIMEOUTS, NODES, POLICIES } from './precedence-table.js';

function valid(input: unknown): Policy {
  const result = validate(input);
  if (!result.ok) throw new Error(`fixture is invalid: ${JSON.stringify(result.issues)}`);
  return result.resource as Policy;
}

const policies = MeshPolicies.of(new Map(POLICIES.map((input) => valid(input)).map((resource) => [`${resource.type}/${resource.name}`, { resource }])), {});
const selection = (node: string) => policies.select({ inbound: NODES[node] === undefined ? [] : [{ tags: NODES[node]! }] });

/** A field as the table writes it. */
export function fieldLine({ path, value, from, lost }: FieldSource): string {
  const shown = Array.isArray(value) ? value.join(',') : String(value);
  const losers = lost.map((ref) => ref.name).sort();
  return `${path}: ${shown} ← ${from.name}${losers.length > 0 ? ` (lost: ${losers.join(', ')})` : ''}`;
}

/** A route as the table writes it. */
export function routeLine(route: EffectiveRoute, service: string): string {
  const path = route.match.path === undefined ? 'any path' : `${route.match.path.type} ${route.match.path.value}`;
  const refs = route.backendRefs.map(({ name, tags, weight }) => {
    const subset = Object.entries(tags).map(([key, value]) => `${key}=${value}`);
    return `${name}${subset.length > 0 ? `{${subset.join(',')}}` : ''} ${weight}`;
  });
  const losers = route.lost.map((ref) => ref.name).sort();
  return `${path} → ${refs.length > 0 ? refs.join(', ') : service} ← ${route.from.name}${losers.length > 0 ? ` (lost: ${losers.join(', ')})` : ''}`;
}

describe('precedence: one comparator (Kuma MADR 054)', () => {
  const rank = (topKind: Ranked['topKind'], toKind: Ranked['toKind'], name: string): Ranked => ({ topKind, toKind, name });
  it.each<[string, Ranked, Ranked]>([
    ['a MeshSubset policy over a Mesh one', rank('Mesh', 'Mesh', 'a'), rank('MeshSubset', 'Mesh', 'z')],
    ['a MeshService policy over a MeshSubset one', rank('MeshSubset', 'MeshService', 'a'), rank('MeshService', 'Mesh', 'z')],
    ['a MeshService policy over a Mesh one, whatever their to says', rank('Mesh', 'MeshService', 'a'), rank('MeshService', 'Mesh', 'z')],
    ['a to MeshService entry over a to Mesh one of the same top kind', rank('Mesh', 'Mesh', 'a'), rank('Mesh', 'MeshService', 'z')],
    ['the lexicographically smaller name among equal kinds', rank('Mesh', 'Mesh', 'b'), rank('Mesh', 'Mesh', 'a')],
    ['by code unit, not locale: uppercase sorts before lowercase', rank('Mesh', 'Mesh', 'a'), rank('Mesh', 'Mesh', 'B')],
  ])('ranks %s', (_what, weaker, stronger) => {
    expect(comparePrecedence(weaker, stronger)).toBeLessThan(0);
    expect(comparePrecedence(stronger, weaker)).toBeGreaterThan(0);
  });
});

describe('the effective configuration per node, field by field, with its source and the policies that lost', () => {
  const rows = (expected: typeof EXPECTED_TIMEOUTS) => Object.entries(expected).flatMap(([node, services]) => Object.entries(services).map(([service, fields]) => ({ node, service, fields })));

  it.each(rows(EXPECTED_TIMEOUTS))('MeshTimeout: $node calling $service', ({ node, service, fields }) => {
    expect(selection(node).outbound(service).timeout.fields.map(fieldLine)).toEqual(fields);
  });

  it.each(rows(EXPECTED_RETRIES))('MeshRetry, lists replaced: $node calling $service', ({ node, service, fields }) => {
    expect(selection(node).outbound(service).retry.fields.map(fieldLine)).toEqual(fields);
  });

  it.each(Object.entries(EXPECTED_ROUTES))('MeshHTTPRoute rules merged by matches, most specific first: %s calling backend', (node, routes) => {
    expect(selection(node).outbound('backend').routes.map((route) => routeLine(route, 'backend'))).toEqual(routes);
  });

  it('merges objects field by field: the winner overrides only what it sets', () => {
    const { conf } = selection('web-1').outbound('backend').timeout;
    expect(conf).toEqual({ connectionTimeout: '5s', http: { requestTimeout: '15s', streamIdleTimeout: '0s' } });
  });

  it('lists every policy with an entry for the calls, strongest first', () => {
    expect(selection('web-2').outbound('payments').policies.map((ref) => ref.name)).toEqual(['web-timeouts', 'canary-timeouts', '00-base-timeouts', 'retry-all', 'zz-late-timeouts']);
  });

  it('shares one selection, and its effective configurations, between nodes the same policies select', () => {
    expect(selection('other-1')).toBe(selection('other-1'));
    expect(policies.select({ inbound: [{ tags: { service: 'other', zone: 'b' } }] })).toBe(selection('other-1'));
    expect(selection('other-1').outbound('backend')).toBe(selection('other-1').outbound('backend'));
    expect(selection('other-1').outbound('backend').key).toBe(selection('client').outbound('backend').key);
  });

  it('selects by MeshSubset only a dataplane with an inbound carrying every tag, and a pure client by Mesh only', () => {
    expect(selection('web-2').policies.map((policy) => policy.name)).toContain('canary-timeouts');
    expect(selection('web-1').policies.map((policy) => policy.name)).not.toContain('canary-timeouts');
    expect(selection('client').policies.every((policy) => policy.spec.targetRef.kind === 'Mesh')).toBe(true);
  });

  it('has nothing to say for a mesh without policies', () => {
    const none = MeshPolicies.of(undefined, {}).select({ inbound: [] });
    expect(none.empty).toBe(true);
    expect(none.outbound('backend')).toMatchObject({ routes: [], policies: [], timeout: { conf: {}, fields: [] } });
  });
});
