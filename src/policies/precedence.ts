import { compareText } from '../common/index.js';
import type { ToTargetKind, TopTargetKind } from './policy-resources.js';

/** One `to[]` entry of one policy, as precedence sees it. */
export interface Ranked {
  /** The kind of the policy's own `spec.targetRef`. */
  readonly topKind: TopTargetKind;
  /** The kind of the entry's `to[].targetRef`. */
  readonly toKind: ToTargetKind;
  /** The policy's name. */
  readonly name: string;
}

// The more specific a selector, the later it is merged, so the more it overrides.
const TOP_RANK: Readonly<Record<TopTargetKind, number>> = { Mesh: 0, MeshSubset: 1, MeshService: 2 };
const TO_RANK: Readonly<Record<ToTargetKind, number>> = { Mesh: 0, MeshService: 1 };

/**
 * The one order of precedence between policy entries that configure the same calls, weakest
 * first (reference/traffic-policies.md §3; Kuma MADR 054 and its rules' sort): entries are
 * merged in this order, so a later one overrides an earlier one field by field.
 * 1. The policy's top-level targetRef: Mesh < MeshSubset < MeshService (a more specific
 *    selector of the dataplanes wins, whatever its `to` says).
 * 2. Then the entry's `to[].targetRef`: Mesh < MeshService.
 * 3. Then the policy's name: the lexicographically smaller name wins, so it comes last.
 * Entries equal on all three (two entries of one policy) keep their order in `to[]`.
 */
export function comparePrecedence(a: Ranked, b: Ranked): number {
  return TOP_RANK[a.topKind] - TOP_RANK[b.topKind] || TO_RANK[a.toKind] - TO_RANK[b.toKind] || compareText(b.name, a.name);
}
