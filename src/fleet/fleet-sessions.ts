import type { SessionView } from '../machines/session-view.js';
import type { SessionRecords } from '../store/session-records.js';

/** A session anywhere in the fleet; `recordedAt` is when its instance last saved it (absent: live, this instance). */
export type FleetSession = SessionView & { readonly recordedAt?: string };

export interface FleetSource {
  readonly records: SessionRecords;
  /** An instance not seen for this long is dead; its records are not shown. */
  readonly ttl: number;
  readonly instance: string;
  /** This instance's sessions now: shown live rather than as last saved. */
  readonly own: { list(): readonly SessionView[]; get(node: string): SessionView | undefined };
}

/**
 * The sessions of every live instance, sorted by node then instance (`GET /sessions?scope=fleet`):
 * this instance's own from its registry, the others' from their saved records. A node can
 * appear once per instance: while a dead stream is not yet noticed, two instances serve it.
 */
export async function fleetSessions(source: FleetSource, node?: string): Promise<FleetSession[]> {
  const records = await source.records.list(source.ttl, node);
  const others: FleetSession[] = records
    .filter((record) => record.instance !== source.instance)
    .map((record) => ({
      ...(record.body as Omit<SessionView, 'transitions'>),
      transitions: (record.story ?? []) as SessionView['transitions'],
      instance: record.instance,
      recordedAt: record.updatedAt,
    }));
  const own = node === undefined ? source.own.list() : [source.own.get(node)].filter((view) => view !== undefined);
  return [...others, ...own].sort((a, b) => compare(a.node, b.node) || compare(a.instance, b.instance));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
