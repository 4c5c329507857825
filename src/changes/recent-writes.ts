import type { ResourceEvent } from '../store/index.js';
import type { RolloutWrite } from './rollouts.js';

/** A write of the log: events appended together, and the revisions they span. */
export interface WriteSummary extends RolloutWrite {
  /** The revision before its first event: what `GET /revisions/{R}?since=` takes. */
  readonly since: number;
  /** Its last event's. */
  readonly revision: number;
}

/** Resources a summary names; `events` counts them all. */
const NAMED = 10;

/**
 * The writes `events` hold, newest first: the events of one append share its `batch`. An event
 * written before logs recorded batches reads as a write of its own.
 */
export function writesOf(events: readonly ResourceEvent[]): WriteSummary[] {
  const writes: WriteSummary[] = [];
  let group: ResourceEvent[] = [];
  const close = () => {
    const first = group[0];
    const last = group.at(-1);
    if (first === undefined || last === undefined) return;
    writes.push({
      since: first.seq - 1,
      revision: last.seq,
      at: last.at,
      by: last.by,
      events: group.length,
      resources: group.slice(0, NAMED).map(({ key, kind }) => ({ type: key.type, mesh: key.mesh, name: key.name, kind })),
    });
    group = [];
  };
  for (const event of events) {
    const last = group.at(-1);
    if (last !== undefined && (event.batch === undefined || last.batch !== event.batch)) close();
    group.push(event);
  }
  close();
  return writes.reverse();
}
