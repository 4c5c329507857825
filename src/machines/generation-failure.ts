import type { GenerationFailure } from './session-events.js';

// The generator's codes for "this node's Dataplane is no longer there" (src/mesh/errors.ts).
const GONE = new Set(['CHANCERY_MESH_DATAPLANE_NOT_FOUND', 'CHANCERY_MESH_MESH_NOT_FOUND']);

/** A failure meaning the node's Dataplane (or its whole mesh) was deleted. */
export function isDataplaneGone(failure: GenerationFailure): boolean {
  return GONE.has(failure.code);
}

/** A failure meaning the node's mesh has mTLS and the node holds no usable certificate: one is issued, then it generates again. */
export function needsCertificate(failure: GenerationFailure): boolean {
  return failure.code === 'CHANCERY_MESH_CERTIFICATE_NEEDED';
}
