import type { Policy, TargetRef } from '../policies/index.js';
import { formatTable } from './format-table.js';

/** Policies as `chancery get` lists them: what each selects, and the services it configures calls to. */
export function policyTable(policies: ReadonlyArray<Policy & { readonly version: number }>): string {
  return formatTable(
    ['MESH', 'NAME', 'TARGET', 'TO', 'VERSION'],
    policies.map((policy) => [
      policy.mesh,
      policy.name,
      targetOf(policy.spec.targetRef),
      [...new Set(policy.spec.to.map((entry) => targetOf(entry.targetRef)))].join(', '),
      String(policy.version),
    ]),
  );
}

/** A targetRef in a few words: `Mesh`, `MeshService echo`, `MeshSubset app=frontend`. */
export function targetOf(targetRef: TargetRef<string>): string {
  if (targetRef.name !== undefined) return `${targetRef.kind} ${targetRef.name}`;
  const tags = Object.entries(targetRef.tags ?? {}).map(([key, value]) => `${key}=${value}`);
  return tags.length === 0 ? targetRef.kind : `${targetRef.kind} ${tags.join(',')}`;
}
