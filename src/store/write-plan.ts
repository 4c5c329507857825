import { keyOf, type ResourceKey } from '../mesh/index.js';
import { NotFoundError, VersionConflictError } from './errors.js';
import { asResourceVersion, type ResourceVersion, type Write } from './types.js';

/** What a log knows of one key: its last event's version, and whether that was an upsert. */
export interface KeyState {
  readonly version: ResourceVersion;
  readonly live: boolean;
}

/** One write of a batch, checked, with the version its event will carry. */
export interface PlannedEvent {
  readonly write: Write;
  readonly key: ResourceKey;
  readonly version: ResourceVersion;
}

/** A key's state after a batch: what the log records for the next batch's checks. */
export interface KeyHead extends KeyState {
  readonly key: ResourceKey;
}

export interface WritePlan {
  /** In the order of the writes. */
  readonly events: readonly PlannedEvent[];
  /** Each key the batch touches, by `keyIdOf`, with its state after the batch. */
  readonly heads: ReadonlyMap<string, KeyHead>;
}

/**
 * Checks a batch against the log and numbers its versions; every backend plans with this,
 * so they agree on versions (test/store/event-log-contract.ts). Throws `VersionConflictError`
 * or `NotFoundError` before anything is appended.
 *
 * Versions count a key's events: 1 on create, +1 on each upsert, and a delete records the
 * deleted version + 1. A key re-created after a delete carries on from there instead of
 * restarting at 1, so a version a client read (`If-Match`) never matches a later incarnation.
 * Each write is checked against the batch's earlier writes, as inside a database transaction.
 */
export function planWrites(writes: readonly Write[], stateOf: (id: string) => KeyState | undefined): WritePlan {
  const heads = new Map<string, KeyHead>();
  const events: PlannedEvent[] = [];
  for (const write of writes) {
    const key = keyOfWrite(write);
    const id = keyIdOf(key);
    const current = heads.get(id) ?? stateOf(id);
    const actual = current?.live === true ? current.version : 'absent';
    if (write.kind === 'deleted' && actual === 'absent') throw new NotFoundError(key);
    if (write.expected !== undefined && write.expected !== actual) throw new VersionConflictError(key, write.expected, actual);
    const version = asResourceVersion((current?.version ?? 0) + 1);
    heads.set(id, { key, version, live: write.kind === 'upserted' });
    events.push({ write, key, version });
  }
  return { events, heads };
}

/** The key a write is about, as a fresh `{ type, mesh, name }` (no extra fields of the caller's). */
export function keyOfWrite(write: Write): ResourceKey {
  if (write.kind === 'upserted') return keyOf(write.resource);
  return { type: write.key.type, mesh: write.key.mesh, name: write.key.name };
}

/** NUL separates the parts: Postgres text cannot hold it, so no stored name contains one. */
export function keyIdOf(key: ResourceKey): string {
  return `${key.type}\0${key.mesh}\0${key.name}`;
}
