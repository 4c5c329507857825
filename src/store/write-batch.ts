import { keyOf, type Resource, type ResourceKey } from '../mesh/index.js';
import { storedIn, storedOf } from './projection.js';
import { sameResource } from './same-resource.js';
import { asSeq, type Author, type Projection, type ResourceEvent, type Seq, type Stored, type Write, type WrittenItem } from './types.js';
import { isMemberOf, keyIdOf, keyOfWrite, type KeyHead, type LogState, type WritePlan } from './write-plan.js';

/** A batch as the store appends it: its keys, what the projection held of each, and the writes to append. */
export interface MarkedBatch {
  readonly keys: readonly ResourceKey[];
  readonly before: readonly (Stored<Resource> | undefined)[];
  /** The writes, each upsert identical to what the projection held marked `identicalTo` its version. */
  readonly writes: readonly Write[];
}

/**
 * Marks each upsert of a resource identical to what `projection` holds as such, so the log
 * appends nothing for it while the key's head is still that version (DESIGN §7). Keys must be
 * distinct: outcomes are told apart by key (the API refuses a change that names one twice).
 */
export function markBatch(writes: readonly Write[], projection: Projection): MarkedBatch {
  const keys = writes.map(keyOfWrite);
  // A bug in the caller, not an outcome.
  if (new Set(keys.map(keyIdOf)).size !== keys.length) throw new Error('a write names one resource twice');
  const before = keys.map((key) => storedIn(projection, key));
  const marked = writes.map((write, i): Write => {
    if (write.kind === 'deleted') return write;
    const current = before[i];
    const identicalTo = current !== undefined && sameResource(current.resource, write.resource) ? current.version : undefined;
    return { kind: 'upserted', resource: write.resource, expected: write.expected, ...(identicalTo !== undefined && { identicalTo }) };
  });
  return { keys, before, writes: marked };
}

/** What each write of `batch` did, from the events the log appended for it. */
export function outcomesOf(batch: MarkedBatch, events: readonly ResourceEvent[]): WrittenItem[] {
  const upserts = new Map<string, ResourceEvent>();
  for (const event of events) if (event.kind === 'upserted') upserts.set(keyIdOf(event.key), event);
  return batch.writes.map((write, i): WrittenItem => {
    const key = batch.keys[i]!;
    const before = batch.before[i];
    if (write.kind === 'deleted') return { key, outcome: 'deleted' };
    const event = upserts.get(keyIdOf(key));
    // No event: the log found it identical to the version the projection held (identicalTo).
    if (event === undefined) return { key, outcome: 'unchanged', stored: before! };
    return { key, outcome: before === undefined ? 'created' : 'configured', stored: storedOf(write.resource, event) };
  });
}

/**
 * The log as a projection knows it, for planning a batch that is not appended (a dry run): the
 * live resources' heads. A deleted key's last version is the log's alone, so a resource the
 * plan re-creates is numbered from 1 here; nothing else differs from what the log would check.
 */
export function logStateOf(projection: Projection): LogState {
  return {
    last: projection.revision,
    head(id) {
      const [type, mesh, name] = id.split('\0') as [ResourceKey['type'], string, string];
      const stored = storedIn(projection, { type, mesh, name });
      return stored === undefined ? undefined : { version: stored.version, live: true };
    },
    *liveMembers(mesh): Iterable<KeyHead> {
      const state = projection.meshes.get(mesh);
      for (const stored of state?.dataplanes.values() ?? []) yield { key: keyOf(stored.resource), version: stored.version, live: true };
      for (const stored of projection.credentials.values()) {
        const key = keyOf(stored.resource);
        if (isMemberOf(key, mesh)) yield { key, version: stored.version, live: true };
      }
    },
  };
}

/** The events a plan would append after `last`, as the log would number and stamp them. */
export function plannedEvents(plan: WritePlan, last: Seq, at: string, by: Author): ResourceEvent[] {
  const batch = asSeq(last + 1);
  return plan.events.map(({ write, key, version }, i): ResourceEvent => {
    const seq = asSeq(last + i + 1);
    return write.kind === 'upserted' ? { seq, key, version, at, by, batch, kind: 'upserted', resource: write.resource } : { seq, key, version, at, by, batch, kind: 'deleted' };
  });
}
