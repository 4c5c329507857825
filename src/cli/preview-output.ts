import type { NodeImpact, PreviewAnswer, TypeImpact } from '../changes/index.js';
import { formatTable } from './format-table.js';
import { unifiedDiff } from './line-diff.js';

/** Short type names in push order (I5), as the table's columns. */
const TYPES = ['CDS', 'EDS', 'LDS', 'RDS', 'SDS'] as const;

/** Nodes the text output lists; `-o json` and `-o diff` show every one. */
const LISTED_NODES = 20;

/**
 * A dry run as text: what each resource would be, the warnings, the summary, and the first
 * affected nodes with what each type would gain (+), change (~) and lose (-).
 */
export function previewText(answer: PreviewAnswer): string {
  const lines = [`Dry run: nothing was written. The change would follow revision ${answer.revision}.`];
  for (const item of answer.items) lines.push(`${item.type} ${item.type === 'Mesh' ? item.name : `${item.mesh}/${item.name}`} would be ${item.outcome}`);
  const { nodesAffected, nodesUnchanged, added, changed, removed } = answer.summary;
  lines.push(`${nodesAffected} node${nodesAffected === 1 ? '' : 's'} affected, ${nodesUnchanged} unchanged; resources sent: ${added} added, ${changed} changed, ${removed} removed`);
  let text = `${lines.join('\n')}\n`;
  const shown = answer.nodes.items.slice(0, LISTED_NODES);
  if (shown.length > 0) {
    text += formatTable(
      ['NODE', 'DATAPLANE', 'CONNECTED', ...TYPES],
      shown.map((node) => [node.node, node.error === undefined ? node.dataplane : `${node.dataplane} (error ${node.error.code})`, node.connectedTo.join(',') || '-', ...TYPES.map((type) => counts(node.types[type]))]),
    );
  }
  if (nodesAffected > shown.length) text += `… and ${nodesAffected - shown.length} more nodes: -o json lists them all\n`;
  return text;
}

function counts(type: TypeImpact | undefined): string {
  if (type === undefined) return '-';
  const parts = [type.added.length > 0 && `+${type.added.length}`, type.changed.length > 0 && `~${type.changed.length}`, type.removed.length > 0 && `-${type.removed.length}`];
  return parts.filter((part) => part !== false).join(' ');
}

/**
 * The changed resources as unified diffs of their JSON: each distinct change once (one shared
 * resource changed for 10,000 nodes is one diff), with the nodes it is sent to.
 */
export function previewDiff(answer: PreviewAnswer): string {
  const changes = new Map<string, { readonly type: string; readonly name: string; readonly was?: string; readonly version?: string; readonly nodes: string[] }>();
  const note = (node: NodeImpact, type: string, name: string, was: string | undefined, version: string | undefined) => {
    const key = `${type}\0${name}\0${was ?? ''}\0${version ?? ''}`;
    const change = changes.get(key) ?? { type, name, ...(was !== undefined && { was }), ...(version !== undefined && { version }), nodes: [] };
    change.nodes.push(node.node);
    changes.set(key, change);
  };
  for (const node of answer.nodes.items) {
    for (const [type, impact] of Object.entries(node.types)) {
      for (const ref of impact!.added) note(node, type, ref.name, undefined, ref.version);
      for (const ref of impact!.changed) note(node, type, ref.name, ref.was, ref.version);
      for (const ref of impact!.removed) note(node, type, ref.name, ref.version, undefined);
    }
  }
  let out = '';
  for (const { type, name, was, version, nodes } of changes.values()) {
    const json = (at: string | undefined) => (at === undefined ? '' : `${JSON.stringify(answer.resources[at] ?? null, null, 2)}\n`);
    out += `--- ${type} ${name}${was === undefined ? ' (not sent before)' : ` ${was}`}\n`;
    out += `+++ ${type} ${name}${version === undefined ? ' (no longer sent)' : ` ${version}`}\n`;
    out += `# sent to ${nodes.length} node${nodes.length === 1 ? '' : 's'}: ${nodes.join(', ')}\n`;
    out += unifiedDiff(json(was), json(version));
  }
  return out;
}
