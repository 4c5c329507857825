import { ChanceryError } from '../common/index.js';
import { isMeshScoped, keyOf, type ResourceKey } from '../mesh/index.js';
import { MeshNotFoundError, NotFoundError, RevisionMovedError, VersionConflictError } from './errors.js';
import { asResourceVersion, asSeq, type AppendOptions, type ResourceVersion, type Seq, type Write } from './types.js';

/** What a log knows of one key: its last event's version, and whether that was an upsert. */
export interface KeyState {
  readonly version: ResourceVersion;
  readonly live: boolean;
}

/** What a batch is checked against: the log's state before it, read under the append lock. */
export interface LogState {
  /** The log's last seq. */
  readonly last: Seq;
  /** A key's head, by `keyIdOf`; undefined for a key never written. */
  head(id: string): KeyState | undefined;
  /** Every resource live in `mesh` (its Dataplanes and keys), with its head: deleted with the mesh. */
  liveMembers(mesh: string): Iterable<KeyHead>;
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
  /** In the order of the writes, each Mesh delete preceded by its members' deletes. */
  readonly events: readonly PlannedEvent[];
  /** Each key the batch touches, by `keyIdOf`, with its state after the batch. */
  readonly heads: ReadonlyMap<string, KeyHead>;
}

/**
 * Checks a batch against the log and numbers its versions; every backend plans with this,
 * so they agree on versions (test/store/event-log-contract.ts). Throws `VersionConflictError`,
 * `NotFoundError` or `MeshNotFoundError` before anything is appended.
 *
 * Versions count a key's events: 1 on create, +1 on each upsert, and a delete records the
 * deleted version + 1. A key re-created after a delete carries on from there instead of
 * restarting at 1, so a version a client read (`If-Match`) never matches a later incarnation.
 * Each write is checked against the batch's earlier writes, as inside a database transaction.
 *
 * Meshes are checked against the log, not against what the writer last read: a Dataplane (or
 * a key) is only written into a mesh live in the log, and deleting a Mesh deletes everything
 * live in it, in the same batch and before it (no revision has a Dataplane without its Mesh). A
 * writer whose projection lags, or another instance writing at the same time, can therefore
 * never leave a Dataplane behind in a deleted mesh, nor a key that would verify tokens again
 * in a mesh re-created under the same name.
 */
export function planWrites(writes: readonly Write[], log: LogState, options: AppendOptions = {}): WritePlan {
  if (options.atRevision !== undefined && options.atRevision !== log.last) throw new RevisionMovedError(options.atRevision, log.last);
  const heads = new Map<string, KeyHead>();
  const events: PlannedEvent[] = [];
  const stateOf = (id: string) => heads.get(id) ?? log.head(id);
  const append = (write: Write, key: ResourceKey, id: string, current: KeyState | undefined) => {
    const version = asResourceVersion((current?.version ?? 0) + 1);
    heads.set(id, { key, version, live: write.kind === 'upserted' });
    events.push({ write, key, version });
  };
  for (const write of writes) {
    const key = keyOfWrite(write);
    const id = keyIdOf(key);
    const current = stateOf(id);
    const actual = current?.live === true ? current.version : 'absent';
    if (write.kind === 'deleted' && actual === 'absent') throw new NotFoundError(key);
    if (write.expected !== undefined && write.expected !== actual) throw new VersionConflictError(key, write.expected, actual);
    // Identical to the head: nothing to append, and the key's version stays (DESIGN §7).
    if (write.kind === 'upserted' && write.identicalTo !== undefined && write.identicalTo === actual) continue;
    if (write.kind === 'upserted' && isMeshScoped(key.type) && stateOf(keyIdOf(meshKeyOf(key.mesh)))?.live !== true) {
      throw new MeshNotFoundError(key.mesh, key);
    }
    if (write.kind === 'deleted' && key.type === 'Mesh') {
      for (const member of membersOf(key.name, log, heads)) {
        append({ kind: 'deleted', key: member }, member, keyIdOf(member), stateOf(keyIdOf(member)));
      }
    }
    append(write, key, id, current);
  }
  return { events, heads };
}

/** What `planGroup` decided for each batch: its plan, or the error that leaves it out. */
export interface GroupPlan {
  readonly outcomes: readonly (WritePlan | ChanceryError)[];
  /** Each key the accepted batches touch, with its state after all of them. */
  readonly heads: ReadonlyMap<string, KeyHead>;
}

/** One batch of a group: its writes, and how it is to be appended. */
export interface GroupBatch {
  readonly writes: readonly Write[];
  readonly options?: AppendOptions;
}

/**
 * Plans several batches that one transaction appends together (group commit): each is checked
 * against the log and the accepted batches before it, as if appended alone in that order. A
 * batch that fails its checks is left out, with its error in its place; the others go on.
 */
export function planGroup(batches: readonly GroupBatch[], log: LogState): GroupPlan {
  const heads = new Map<string, KeyHead>();
  let appended = 0;
  const state = {
    get last() {
      return asSeq(log.last + appended);
    },
    head: (id: string) => heads.get(id) ?? log.head(id),
    *liveMembers(mesh: string): Iterable<KeyHead> {
      for (const head of heads.values()) {
        if (head.live && isMemberOf(head.key, mesh)) yield head;
      }
      for (const head of log.liveMembers(mesh)) if (!heads.has(keyIdOf(head.key))) yield head;
    },
  } satisfies LogState;
  const outcomes = batches.map(({ writes, options }) => {
    try {
      const plan = planWrites(writes, state, options);
      for (const [id, head] of plan.heads) heads.set(id, head);
      appended += plan.events.length;
      return plan;
    } catch (error) {
      // A conflict or a missing resource refuses this batch; anything else is a bug.
      if (error instanceof ChanceryError) return error;
      throw error;
    }
  });
  return { outcomes, heads };
}

/** Whether the key is of a resource that lives in `mesh`. */
export function isMemberOf(key: ResourceKey, mesh: string): boolean {
  return isMeshScoped(key.type) && key.mesh === mesh;
}

/** What lives in `mesh` at this point of the batch, by key id: the log's, and the batch's own. */
function membersOf(mesh: string, log: LogState, heads: ReadonlyMap<string, KeyHead>): ResourceKey[] {
  const live = new Map<string, ResourceKey>();
  for (const head of log.liveMembers(mesh)) live.set(keyIdOf(head.key), head.key);
  for (const [id, head] of heads) {
    if (!isMemberOf(head.key, mesh)) continue;
    if (head.live) live.set(id, head.key);
    else live.delete(id);
  }
  return [...live.keys()].sort(byCodeUnit).map((id) => live.get(id)!);
}

/** The keys whose heads a batch needs: each write's, and the mesh of each mesh-scoped one it writes. */
export function keysToRead(writes: readonly Write[]): ResourceKey[] {
  const keys = new Map<string, ResourceKey>();
  for (const write of writes) {
    const key = keyOfWrite(write);
    keys.set(keyIdOf(key), key);
    if (write.kind === 'upserted' && isMeshScoped(key.type)) keys.set(keyIdOf(meshKeyOf(key.mesh)), meshKeyOf(key.mesh));
  }
  return [...keys.values()];
}

/** The meshes a batch deletes, whose live members the plan needs. */
export function meshesDeleted(writes: readonly Write[]): string[] {
  return [...new Set(writes.flatMap((write) => (write.kind === 'deleted' && write.key.type === 'Mesh' ? [write.key.name] : [])))];
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

function meshKeyOf(mesh: string): ResourceKey {
  return { type: 'Mesh', mesh, name: mesh };
}

/** By UTF-16 code unit: the same order on every instance, whatever its locale. */
function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
