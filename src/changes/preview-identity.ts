import { mtlsModeOf, parseNodeId, spiffeIdsOf, type GenerationInput, type MeshResources, type NodeCertificate } from '../mesh/index.js';

/**
 * The certificate a preview generates a node with in a mesh with mTLS (docs/mtls.md): the one
 * this instance holds for it when it still fits the mesh at `input`, else a stand-in naming the
 * SPIFFE IDs the node would be issued and one of the mesh's CAs. A write never issues a
 * certificate, so the identity Secret is the same before and after a write (the stand-in's
 * bytes name only its IDs): every other resource is previewed exactly as the sessions would
 * generate it. The stand-in exists only inside a preview, which is diffed, never pushed (I1).
 */
export function previewIdentity(node: string, input: GenerationInput, held: NodeCertificate | undefined): NodeCertificate | undefined {
  const id = parseNodeId(node);
  if (!id.ok) return undefined;
  const state = input.meshes.get(id.mesh);
  const dataplane = state?.dataplanes.get(id.name)?.resource;
  if (state === undefined || dataplane === undefined || mtlsModeOf(state.mesh.resource) === 'disabled') return undefined;
  const spiffeIds = spiffeIdsOf(dataplane);
  if (held !== undefined && state.authorities.has(held.issuer) && sameIds(held.spiffeIds, spiffeIds)) return held;
  // No CA yet (being created): the node's generation fails alike before and after, as it would.
  const issuer = [...state.authorities.keys()].sort()[0];
  if (issuer === undefined) return undefined;
  // One stand-in per mesh state and identity: the nodes of a service share it, and its Secret is encoded once.
  let standIns = STAND_INS.get(state);
  if (standIns === undefined) STAND_INS.set(state, (standIns = new Map()));
  const key = spiffeIds.join(' ');
  let standIn = standIns.get(key);
  if (standIn === undefined) standIns.set(key, (standIn = { certificate: `preview of ${key}`, privateKey: 'preview', issuer, spiffeIds }));
  return standIn;
}

const STAND_INS = new WeakMap<MeshResources, Map<string, NodeCertificate>>();

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}
