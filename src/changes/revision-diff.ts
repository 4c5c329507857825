import { CONFIGURATION_TYPES, keyOf, type Resource, type ResourceKey } from '../mesh/index.js';
import { checkpointOf, sameResource, type Projection, type Stored, type Write } from '../store/index.js';

/** One resource that differs between two revisions. */
export interface ResourceChange {
  readonly key: ResourceKey;
  readonly change: 'created' | 'changed' | 'deleted';
  /** As it was at the first revision; absent when it did not exist then. */
  readonly before?: Stored<Resource>;
  /** As it is at the second; absent when it does not exist then. */
  readonly after?: Stored<Resource>;
}

/** Meshes first, so that what lives in them follows them; then by type and name. */
const ORDER: Readonly<Record<string, number>> = { Mesh: 0 };

/**
 * The configuration resources (what users write: Meshes, Dataplanes, policies) that differ
 * between `from` and `to` (in `mesh` alone when given), in apply order. Credentials (keys,
 * tokens, CAs) are left out, as going back to a revision must not make a revoked key verify
 * again, nor remove a key made since; and so are statuses Chancery writes itself (DataplaneTls).
 */
export function resourceChanges(from: Projection, to: Projection, mesh?: string): ResourceChange[] {
  const was = configurationOf(from, mesh);
  const is = configurationOf(to, mesh);
  const changes: ResourceChange[] = [];
  for (const [id, before] of was) {
    const after = is.get(id);
    if (after === undefined) changes.push({ key: keyOf(before.resource), change: 'deleted', before });
    else if (!sameResource(before.resource, after.resource)) changes.push({ key: keyOf(before.resource), change: 'changed', before, after });
  }
  for (const [id, after] of is) if (!was.has(id)) changes.push({ key: keyOf(after.resource), change: 'created', after });
  return changes.sort((a, b) => (ORDER[a.key.type] ?? 1) - (ORDER[b.key.type] ?? 1) || compare(a.key.type, b.key.type) || compare(a.key.mesh, b.key.mesh) || compare(a.key.name, b.key.name));
}

/**
 * The writes that put the store back as it was at `then`, from `now` (in `mesh` alone when
 * given): each resource that differs written as it was, each one made since deleted, each
 * conditional on the version `now` holds, so a write landing meanwhile makes it a conflict
 * rather than be overwritten. Only what differs is written.
 */
export function revertWrites(then: Projection, now: Projection, mesh?: string): Write[] {
  const changes = resourceChanges(now, then, mesh);
  const upserts: Write[] = [];
  const deletes: Write[] = [];
  for (const { key, before: current, after: wanted } of changes) {
    if (wanted !== undefined) upserts.push({ kind: 'upserted', resource: wanted.resource, expected: current?.version ?? 'absent' });
    else deletes.push({ kind: 'deleted', key, expected: current!.version });
  }
  // A mesh's members are deleted before it, as the log would delete them with it.
  return [...upserts, ...deletes.reverse()];
}

/** Each configuration resource of `projection` (of `mesh` alone when given), by type, mesh and name. */
function configurationOf(projection: Projection, mesh: string | undefined): Map<string, Stored<Resource>> {
  const out = new Map<string, Stored<Resource>>();
  for (const stored of checkpointOf(projection).resources) {
    if (!(CONFIGURATION_TYPES as readonly string[]).includes(stored.resource.type)) continue;
    const key = keyOf(stored.resource);
    if (mesh !== undefined && key.mesh !== mesh) continue;
    out.set(`${key.type}\0${key.mesh}\0${key.name}`, stored);
  }
  return out;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
