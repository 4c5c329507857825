import type { RolloutAnswer } from '../changes/index.js';
import { formatTable } from './format-table.js';

/** Resources of the write the text names; `-o json` has them all (up to the API's 100). */
const NAMED_RESOURCES = 5;

/** A rollout as text: the write, the counts, the NACKs grouped by message, the first pending nodes. */
export function rolloutText(answer: RolloutAnswer): string {
  const { write, nodes } = answer;
  const author = write.by.caller === undefined ? write.by.instance : `${write.by.instance} (${write.by.caller})`;
  const named = write.resources.slice(0, NAMED_RESOURCES).map(({ type, mesh, name, kind }) => `${type} ${type === 'Mesh' ? name : `${mesh}/${name}`} ${kind}`);
  const more = write.events > named.length ? `, and ${write.events - named.length} more` : '';
  let text = `Revision ${answer.revision} (since ${answer.since}), written ${write.at} by ${author}: ${named.join(', ')}${more}\n`;
  text += formatTable(['AFFECTED', 'ACKED', 'NACKED', 'PENDING', 'NOT CONNECTED'], [[nodes.affected, nodes.acked, nodes.nacked, nodes.pending, nodes.notConnected].map(String)]);
  for (const nack of answer.nacks) text += `NACKed (${nack.type}) by ${nack.count} node${nack.count === 1 ? '' : 's'}: ${nack.message}\n  ${listed(nack.nodes, nack.count)}\n`;
  if (answer.pending.length > 0) text += `Pending: ${listed(answer.pending.map(({ node, reason, instance }) => `${node} (${reason}, on ${instance})`), nodes.pending)}\n`;
  if (answer.deleted.length > 0) text += `Deleted, their streams ended: ${answer.deleted.join(', ')}\n`;
  text += answer.complete ? `Complete${answer.ackedAt === undefined ? '' : `: the last ACK at ${answer.ackedAt}`}\n` : 'Not complete\n';
  return text;
}

function listed(names: readonly string[], count: number): string {
  return `${names.join(', ')}${count > names.length ? `, and ${count - names.length} more` : ''}`;
}
