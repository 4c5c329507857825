import { excerpt } from '../common/index.js';
import { DNS_LABEL_RULE, isDnsLabel } from './dns-label.js';

export type NodeIdParse =
  | { readonly ok: true; readonly mesh: string; readonly name: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Reads a node id, `<mesh>.<name>`, naming the Dataplane a session serves (DESIGN §6).
 * It splits on the first dot; both parts must be DNS labels, so the split is unambiguous.
 * A reason quotes the id cut short: it becomes a gRPC status, which must stay deliverable.
 */
export function parseNodeId(id: string): NodeIdParse {
  const dot = id.indexOf('.');
  if (dot === -1) return { ok: false, reason: `node id ${excerpt(id)} has no dot: it must be <mesh>.<name>` };
  const mesh = id.slice(0, dot);
  const name = id.slice(dot + 1);
  if (!isDnsLabel(mesh)) return { ok: false, reason: `mesh ${excerpt(mesh)} of node id ${excerpt(id)} (<mesh>.<name>) ${DNS_LABEL_RULE}` };
  if (!isDnsLabel(name)) return { ok: false, reason: `name ${excerpt(name)} of node id ${excerpt(id)} (<mesh>.<name>) ${DNS_LABEL_RULE}` };
  return { ok: true, mesh, name };
}

/** The node id of Dataplane `name` in `mesh`: what its proxy or gRPC client puts in `node.id`. */
export function nodeIdOf(mesh: string, name: string): string {
  return `${mesh}.${name}`;
}
