import { compareText } from '../common/index.js';
import type { SessionView } from '../machines/index.js';
import type { SessionRecords } from '../store/index.js';

/** A session anywhere in the fleet; `recordedAt` is when its instance last saved it (absent: live, this instance). */
export type FleetSession = SessionView & { readonly recordedAt?: string };

export interface RecordedSource {
  readonly records: SessionRecords;
  /** An instance not seen for this long is dead; its records are not shown. */
  readonly ttl: number;
  /** This instance: its own records are left out, as its registry is the live truth. */
  readonly instance: string;
}

/** The sessions of the other live instances, as they last saved them, sorted by node then instance. */
export async function recordedSessions(source: RecordedSource, node?: string): Promise<FleetSession[]> {
  const records = await source.records.list(source.ttl, node);
  return records
    .filter((record) => record.instance !== source.instance)
    .map((record) => ({
      ...(record.body as Omit<SessionView, 'transitions'>),
      transitions: (record.story ?? []) as SessionView['transitions'],
      instance: record.instance,
      recordedAt: record.updatedAt,
    }));
}

/**
 * The sessions of every live instance, sorted by node then instance: this instance's own from
 * its registry (`own`), the others' from their saved records. A node can appear once per
 * instance: while a dead stream is not yet noticed, two instances serve it.
 */
export async function fleetSessions(source: RecordedSource, own: readonly SessionView[], node?: string): Promise<FleetSession[]> {
  const others = await recordedSessions(source, node);
  return [...others, ...own].sort((a, b) => compareText(a.node, b.node) || compareText(a.instance, b.instance));
}
