import { ChanceryError, excerpt } from '../common/index.js';

/** A node id that is not `<mesh>.<name>`: no Dataplane can ever match it. */
export class InvalidNodeIdError extends ChanceryError {
  readonly code = 'CHANCERY_MESH_INVALID_NODE_ID';
  constructor(
    readonly node: string,
    readonly revision: number,
    readonly reason: string,
  ) {
    super(`node id ${excerpt(node)} is invalid: ${reason}`);
  }
}

/** The node's mesh does not exist at this revision; the session waits for it (DESIGN §6). */
export class MeshNotFoundError extends ChanceryError {
  readonly code = 'CHANCERY_MESH_MESH_NOT_FOUND';
  constructor(
    readonly node: string,
    readonly revision: number,
    readonly mesh: string,
  ) {
    super(`mesh ${mesh} of node ${node} does not exist at revision ${revision}`);
  }
}

/**
 * The node's Dataplane does not exist at this revision. Not a failure of the session: it
 * waits in `awaiting-snapshot` until the Dataplane is created (DESIGN §6).
 */
export class DataplaneNotFoundError extends ChanceryError {
  readonly code = 'CHANCERY_MESH_DATAPLANE_NOT_FOUND';
  constructor(
    readonly node: string,
    readonly revision: number,
    readonly mesh: string,
    readonly dataplane: string,
  ) {
    super(`dataplane ${dataplane} of node ${node} does not exist in mesh ${mesh} at revision ${revision}`);
  }
}
