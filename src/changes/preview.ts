import type { ResourceType } from '../mesh/index.js';
import type { PlannedChange, WrittenItem } from '../store/index.js';
import { decodeAny } from '../xds/index.js';
import type { Impact, NodeImpact } from './impact.js';
import type { ChangeWarning } from './warnings.js';

/** Which affected nodes an answer details: the summary always counts them all. */
export interface NodePage {
  readonly offset: number;
  readonly limit: number;
}

/** Nodes detailed per page unless asked otherwise, and the most one page may hold. */
export const NODES_PAGE = { default: 100, max: 1_000 } as const;

/** One write as an answer shows it. */
export interface ItemJson {
  readonly type: ResourceType;
  readonly mesh: string;
  readonly name: string;
  readonly outcome: WrittenItem['outcome'];
  /** The resource's version after it; left out where only the log can number it (a dry run's creation). */
  readonly version?: number;
}

/** The answer of a dry run (`?dryRun=true`): what the write would do, nothing appended. */
export interface PreviewAnswer {
  readonly dryRun: true;
  /** The store revision the write would follow. */
  readonly revision: number;
  readonly items: readonly ItemJson[];
  readonly warnings: readonly ChangeWarning[];
  readonly summary: {
    readonly nodesAffected: number;
    readonly nodesUnchanged: number;
    /** Resources that would be sent anew, changed, or no longer sent, summed over the affected nodes. */
    readonly added: number;
    readonly changed: number;
    readonly removed: number;
  };
  /** The affected nodes of the page, sorted by node id, and how many there are. */
  readonly nodes: { readonly items: readonly NodeImpact[]; readonly offset: number; readonly limit: number; readonly total: number };
  /** Every resource version the page's nodes name, old and new, as proto3 JSON: what `-o diff` compares. */
  readonly resources: Readonly<Record<string, unknown>>;
}

/** The dry run's answer: the plan's outcomes, its warnings, and its impact, detailed for one page of nodes. */
export function previewAnswer(plan: PlannedChange, impact: Impact, warnings: readonly ChangeWarning[], page: NodePage): PreviewAnswer {
  let added = 0;
  let changed = 0;
  let removed = 0;
  for (const node of impact.nodes) {
    for (const type of Object.values(node.types)) {
      added += type!.added.length;
      changed += type!.changed.length;
      removed += type!.removed.length;
    }
  }
  const items = impact.nodes.slice(page.offset, page.offset + page.limit);
  return {
    dryRun: true,
    revision: plan.before.revision,
    items: plan.items.map((item) => itemJson(item, item.outcome !== 'created')),
    warnings,
    summary: { nodesAffected: impact.nodes.length, nodesUnchanged: impact.unchanged, added, changed, removed },
    nodes: { items, offset: page.offset, limit: page.limit, total: impact.nodes.length },
    resources: resourcesOf(items, impact),
  };
}

/** One write's outcome as an answer shows it; `withVersion` false leaves its version out. */
export function itemJson(item: WrittenItem, withVersion = true): ItemJson {
  const { key, outcome, stored } = item;
  return { type: key.type, mesh: key.mesh, name: key.name, outcome, ...(withVersion && stored !== undefined && { version: stored.version }) };
}

function resourcesOf(nodes: readonly NodeImpact[], impact: Impact): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const render = (version: string) => {
    if (version in out) return;
    const resource = impact.resources.get(version);
    if (resource !== undefined) out[version] = decodeAny(resource.any);
  };
  for (const node of nodes) {
    for (const type of Object.values(node.types)) {
      for (const ref of type!.added) render(ref.version);
      for (const ref of type!.changed) {
        render(ref.version);
        render(ref.was);
      }
      for (const ref of type!.removed) render(ref.version);
    }
  }
  return out;
}
