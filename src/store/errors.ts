import { ChanceryError } from '../chancery-error.js';
import type { ResourceKey } from '../mesh/resources.js';
import { describeKey } from './describe-key.js';
import type { ResourceVersion } from './types.js';

/** A write's `expected` version did not match the log; nothing in its batch was appended. */
export class VersionConflictError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_VERSION_CONFLICT';

  constructor(
    readonly key: ResourceKey,
    readonly expected: ResourceVersion | 'absent',
    readonly actual: ResourceVersion | 'absent',
  ) {
    const found = actual === 'absent' ? 'does not exist' : `is at version ${actual}`;
    super(`${describeKey(key)}: expected ${describeVersion(expected)}, but it ${found}`);
  }
}

/** A delete named a resource that does not exist; nothing in its batch was appended. */
export class NotFoundError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_NOT_FOUND';

  constructor(readonly key: ResourceKey) {
    super(`${describeKey(key)} does not exist`);
  }
}

/** A Dataplane was written into a mesh that does not exist; nothing was appended. */
export class MeshNotFoundError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_MESH_NOT_FOUND';

  constructor(
    readonly mesh: string,
    readonly key: ResourceKey,
  ) {
    super(`cannot write ${describeKey(key)}: Mesh ${mesh} does not exist`);
  }
}

/**
 * The event log could not be reached (or the store is not running). The projection stays at
 * its last revision: an outage never becomes "no resources" (an empty configuration, I1).
 */
export class StoreUnavailableError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_UNAVAILABLE';

  constructor(
    /** What the store was doing: `reading events after seq 12`, `appending 3 events`. */
    readonly operation: string,
    options: { readonly cause?: unknown } = {},
  ) {
    super(`store unavailable while ${operation}${options.cause === undefined ? '' : `: ${messageOf(options.cause)}`}`, options);
  }
}

/** A store spec (`--store`, `CHANCERY_STORE`) names no backend Chancery has. */
export class UnsupportedStoreError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_UNSUPPORTED';

  constructor(
    readonly spec: string,
    readonly accepted: readonly string[],
  ) {
    super(`store "${spec}" is not supported: use one of ${accepted.join(', ')}`);
  }
}

/**
 * The database was migrated by a newer Chancery than this one: this instance refuses to start
 * rather than write to a schema it does not know.
 */
export class StoreSchemaTooNewError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_SCHEMA_TOO_NEW';

  constructor(
    readonly found: number,
    readonly known: number,
  ) {
    super(`the store's schema is at version ${found}, but this Chancery knows versions up to ${known}: upgrade Chancery`);
  }
}

function describeVersion(version: ResourceVersion | 'absent'): string {
  return version === 'absent' ? 'it to be absent' : `version ${version}`;
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
