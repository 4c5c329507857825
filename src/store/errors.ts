import { ChanceryError } from '../common/index.js';
import type { ResourceKey } from '../mesh/index.js';
import { describeKey } from './describe-key.js';
import type { ResourceVersion, Seq } from './types.js';

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

/**
 * A resource does not exist: a delete named one (nothing in its batch was appended), or a
 * read did, now or at `revision`.
 */
export class NotFoundError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_NOT_FOUND';

  constructor(
    readonly key: ResourceKey,
    readonly revision?: Seq,
  ) {
    super(revision === undefined ? `${describeKey(key)} does not exist` : `${describeKey(key)} did not exist at revision ${revision}`);
  }
}

/**
 * A read asked for a revision older than the retained history: the events up to `horizon`
 * were folded into a checkpoint (retention), so the state at `revision` is gone.
 */
export class RevisionCompactedError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_REVISION_COMPACTED';

  constructor(
    readonly revision: Seq,
    /** The oldest revision still answerable; events up to it were compacted. */
    readonly horizon: Seq,
  ) {
    super(`revision ${revision} is older than the retained history, which starts at revision ${horizon} (older events were compacted by the retention setting)`);
  }
}

/**
 * A write made on condition that the log was still at `expected` (`atRevision`: what a preview
 * checked) found it moved on: another write landed between the preview and this one, so what
 * was checked no longer describes what would be written. Nothing was appended.
 */
export class RevisionMovedError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_REVISION_MOVED';

  constructor(
    readonly expected: Seq,
    readonly actual: Seq,
  ) {
    super(`the store moved from revision ${expected} to ${actual} while this write was checked; nothing was written: check it again`);
  }
}

/** A read asked for a revision the log has not reached yet. */
export class FutureRevisionError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_FUTURE_REVISION';
  readonly field = 'revision';

  constructor(
    readonly revision: Seq,
    /** The store's revision when it looked. */
    readonly current: Seq,
  ) {
    super(`revision ${revision} is ahead of the store, which is at revision ${current}`);
  }
}

/** A retention setting that keeps nothing or is not a number: refused before the store starts. */
export class InvalidRetentionError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_INVALID_RETENTION';

  constructor(readonly retention: unknown) {
    super(`retention must be { events: N } (a whole number of events, at least 1) or { maxAge: ms } (more than 0); got ${JSON.stringify(retention)}`);
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

/**
 * The database refused a value as invalid data (SQLSTATE class 22: a NUL or a lone surrogate
 * in JSONB, say). Not an outage, so never a 503 that asks to retry: validation should have
 * refused the value first, on every store alike (issue 11), so this is a bug in Chancery.
 */
export class StoreRejectedWriteError extends ChanceryError {
  readonly code = 'CHANCERY_STORE_REJECTED_WRITE';

  constructor(
    readonly operation: string,
    options: { readonly cause?: unknown } = {},
  ) {
    super(`the store refused the data while ${operation}: a bug, as validation should have refused it first; the server log has the details`, options);
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
