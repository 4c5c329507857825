import { InvalidRetentionError } from './errors.js';
import { applyEvents, checkpointOf, projectionOf } from './projection.js';
import type { Author, EventLog, Projection, ResourceEvent, Retention, Seq } from './types.js';

export interface CompactionOptions {
  /** The log's last seq as the caller knows it: `{ events: N }` keeps the N events before it. */
  readonly head: Seq;
  /** Now, for `{ maxAge }`. */
  readonly now: Date;
  readonly author: Author;
  /** Events per `readAfter`. */
  readonly pageSize: number;
}

export interface Compaction {
  /** The horizon before: events up to it were already compacted. */
  readonly previous: Seq;
  /** The horizon after; equal to `previous` when there was nothing to compact. */
  readonly horizon: Seq;
}

/**
 * Folds the events `retention` does not keep into a new checkpoint: the previous checkpoint
 * plus the events after it, up to the first event kept, folded by `applyEvents` — the same
 * fold every store runs, so a store that starts from the checkpoint holds exactly what one
 * that read every event holds. The log then deletes the folded events.
 *
 * Only revisions before the checkpoint become unanswerable: "what did X look like at R" for
 * any R from the checkpoint on is the checkpoint's copy of X or X's last event up to R.
 *
 * `{ maxAge }` keeps every event from the first one written within the age on, so an event
 * stamped out of order (clocks of several instances) is kept rather than lost early.
 */
export async function compact(log: EventLog, retention: Retention, options: CompactionOptions): Promise<Compaction> {
  const checkpoint = await log.readCheckpoint();
  const previous = checkpoint.seq;
  const cutoff = 'maxAge' in retention ? options.now.getTime() - retention.maxAge : undefined;
  const target = 'events' in retention ? options.head - retention.events : Number.POSITIVE_INFINITY;
  if (target <= previous) return { previous, horizon: previous };

  let folded: Projection = projectionOf(checkpoint);
  for (;;) {
    const limit = Math.min(options.pageSize, target - folded.revision);
    if (limit <= 0) break;
    const events = await log.readAfter(folded.revision, limit);
    const kept = cutoff === undefined ? -1 : events.findIndex((event) => Date.parse(event.at) >= cutoff);
    const compacted: readonly ResourceEvent[] = kept === -1 ? events : events.slice(0, kept);
    folded = applyEvents(folded, compacted);
    if (kept !== -1 || events.length < limit) break;
  }
  if (folded.revision <= previous) return { previous, horizon: previous };
  return { previous, horizon: await log.writeCheckpoint(checkpointOf(folded), options.author) };
}

/** Checks a retention setting (from the library, where types are only a hint); throws `InvalidRetentionError`. */
export function checkRetention(retention: unknown): Retention {
  const value = retention as Partial<Record<'events' | 'maxAge', unknown>> | null;
  if (typeof value === 'object' && value !== null) {
    const { events, maxAge } = value;
    if (maxAge === undefined && typeof events === 'number' && Number.isSafeInteger(events) && events >= 1) return { events };
    if (events === undefined && typeof maxAge === 'number' && Number.isFinite(maxAge) && maxAge > 0) return { maxAge };
  }
  throw new InvalidRetentionError(retention);
}

/** How logs and help name a retention setting: `the newest 1000 events`, `events of the last 86400000 ms`. */
export function describeRetention(retention: Retention | undefined): string {
  if (retention === undefined) return 'every event';
  return 'events' in retention ? `the newest ${retention.events} events` : `events of the last ${retention.maxAge} ms`;
}
