import { Subject, type Observable } from 'rxjs';
import { ChanceryError } from '../chancery-error.js';
import { RESOURCE_TYPES, type Resource, type ResourceKey, type ResourceType, type Valid } from '../mesh/index.js';
import { StoreUnavailableError } from './errors.js';
import { ADVISORY_LOCK, EVENTS_CHANNEL, migrate } from './migrations.js';
import type { SqlClient, SqlRow } from './sql-client.js';
import {
  asResourceVersion,
  asSeq,
  type Author,
  type EventLog,
  type ResourceEvent,
  type Seq,
  type Write,
} from './types.js';
import { keyIdOf, keyOfWrite, planWrites, type KeyState } from './write-plan.js';

export interface SqlEventLogOptions {
  /** Stamps each event's `at`; default the system clock. */
  readonly now?: () => Date;
  /** Whether `close()` closes the client too; default true. */
  readonly ownsClient?: boolean;
}

// Optimization: each append sends its batch as one JSON parameter, unpacked by
// jsonb_to_recordset, so a batch costs the same round trips whatever its size, and no driver
// has to serialise arrays (pg and PGlite do that differently).

/** The heads of the batch's keys, and the last seq, read under the append lock. */
const READ_HEADS = `
  SELECT
    (SELECT coalesce(max(seq), 0) FROM events) AS last,
    (SELECT coalesce(jsonb_agg(jsonb_build_array(r.resource_type, r.mesh, r.name, r.version, r.live)), '[]'::jsonb)
       FROM resources r
       JOIN jsonb_to_recordset($1::text::jsonb) AS k(resource_type text, mesh text, name text)
         ON r.resource_type = k.resource_type AND r.mesh = k.mesh AND r.name = k.name) AS heads`;

/** Appends the events, moves the heads, and wakes readers at commit (NOTIFY is delivered then). */
const WRITE_EVENTS = `
  WITH appended AS (
    INSERT INTO events (seq, resource_type, mesh, name, kind, body, version, at, instance, caller)
    SELECT e.seq, e.resource_type, e.mesh, e.name, e.kind, e.body, e.version, $3::timestamptz, $4::text, $5::text
      FROM jsonb_to_recordset($1::text::jsonb)
        AS e(seq bigint, resource_type text, mesh text, name text, kind text, body jsonb, version bigint)
  ), heads AS (
    INSERT INTO resources (resource_type, mesh, name, version, live, seq)
    SELECT h.resource_type, h.mesh, h.name, h.version, h.live, h.seq
      FROM jsonb_to_recordset($2::text::jsonb)
        AS h(resource_type text, mesh text, name text, version bigint, live boolean, seq bigint)
    ON CONFLICT (resource_type, mesh, name)
      DO UPDATE SET version = excluded.version, live = excluded.live, seq = excluded.seq
  )
  SELECT pg_notify('${EVENTS_CHANNEL}', $6::text)`;

const READ_AFTER = `
  SELECT seq, resource_type, mesh, name, kind, body, version,
         to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, instance, caller
    FROM events
   WHERE seq > $1::bigint
   ORDER BY seq
   LIMIT $2::integer`;

/**
 * The event log in SQL, shared by Postgres and PGlite (`SqlClient` hides the driver). The
 * schema is in migrations.ts; this file holds every query the log runs.
 *
 * Order (I7): appends take `ADVISORY_LOCK.append` for their whole transaction and number
 * their events `max(seq) + 1` under it. A Postgres SEQUENCE would not do: `nextval()` is not
 * transactional, so a transaction that drew seq 5 can commit after one that drew 6. A reader
 * that saw 6 would move its revision past 5 and never read it (issue 3: "a later sequence
 * number can commit before an earlier one"), and a rolled-back transaction would leave a
 * gap. Under the lock, a writer reads `max(seq)` only after the previous holder has committed
 * or rolled back (Postgres releases locks after the commit is visible), so seqs commit in
 * order and without gaps: a reader that has seen seq N has seen every seq below it. The price
 * is that appends to one database are serial; `bench/` measures it.
 */
export class SqlEventLog implements EventLog {
  readonly #client: SqlClient;
  readonly #now: () => Date;
  readonly #ownsClient: boolean;
  readonly #wakeups = new Subject<void>();
  readonly wakeups: Observable<void> = this.#wakeups.asObservable();
  #unlisten: (() => Promise<void>) | undefined;
  #closed = false;

  private constructor(client: SqlClient, options: SqlEventLogOptions) {
    this.#client = client;
    this.#now = options.now ?? (() => new Date());
    this.#ownsClient = options.ownsClient ?? true;
  }

  /**
   * Migrates the schema and starts listening for appends. Rejects with `StoreUnavailableError`
   * when the database cannot be reached (and then leaves the client open: it is the caller's).
   */
  static async open(client: SqlClient, options: SqlEventLogOptions = {}): Promise<SqlEventLog> {
    const log = new SqlEventLog(client, options);
    try {
      await migrate(client);
      log.#unlisten = await client.listen(EVENTS_CHANNEL, () => log.#wakeups.next());
    } catch (error) {
      throw unavailable('opening the event log', error);
    }
    return log;
  }

  async append(writes: readonly Write[], author: Author): Promise<readonly ResourceEvent[]> {
    const operation = `appending ${writes.length} events`;
    this.#assertOpen(operation);
    if (writes.length === 0) return [];
    const by: Author = author.caller === undefined ? { instance: author.instance } : { instance: author.instance, caller: author.caller };
    const at = this.#now().toISOString();
    const keys = new Map<string, ResourceKey>();
    for (const write of writes) {
      const key = keyOfWrite(write);
      keys.set(keyIdOf(key), key);
    }
    try {
      return await this.#client.transaction(async (tx) => {
        // Alone in its statement: in READ COMMITTED a statement reads what was committed when
        // it started, so only statements after this one see the previous holder's commit.
        await tx.query(`SELECT ${ADVISORY_LOCK.append}`);
        const [row] = await tx.query(READ_HEADS, [JSON.stringify([...keys.values()].map(columnsOf))]);
        const last = Number(row?.['last'] ?? 0);
        const states = headsOf(row?.['heads']);
        // Throws VersionConflictError or NotFoundError: the transaction rolls back, nothing is appended.
        const plan = planWrites(writes, (id) => states.get(id));
        const events = plan.events.map(({ write, key, version }, index): ResourceEvent => {
          const seq = asSeq(last + 1 + index);
          return write.kind === 'upserted'
            ? { seq, key, version, at, by, kind: 'upserted', resource: write.resource }
            : { seq, key, version, at, by, kind: 'deleted' };
        });
        const lastSeq = last + events.length;
        const lastSeqOf = new Map<string, Seq>();
        const rows = events.map((event) => {
          lastSeqOf.set(keyIdOf(event.key), event.seq);
          const body = event.kind === 'upserted' ? event.resource : null;
          return { seq: event.seq, ...columnsOf(event.key), kind: event.kind, body, version: event.version };
        });
        const heads = [...plan.heads].map(([id, { key, version, live }]) => ({ ...columnsOf(key), version, live, seq: lastSeqOf.get(id) }));
        await tx.query(WRITE_EVENTS, [JSON.stringify(rows), JSON.stringify(heads), at, by.instance, by.caller ?? null, String(lastSeq)]);
        return events;
      });
    } catch (error) {
      // A connection lost during COMMIT leaves the outcome unknown: the write may be in the
      // log although this rejects. A retry with its `expected` version cannot apply it twice.
      throw unavailable(operation, error);
    }
  }

  async readAfter(after: Seq, limit: number): Promise<readonly ResourceEvent[]> {
    const operation = `reading events after seq ${after}`;
    this.#assertOpen(operation);
    let rows: readonly SqlRow[];
    try {
      rows = await this.#client.query(READ_AFTER, [after, limit]);
    } catch (error) {
      throw unavailable(operation, error);
    }
    return rows.map(eventOf);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#wakeups.complete();
    try {
      await this.#unlisten?.();
    } finally {
      if (this.#ownsClient) await this.#client.close();
    }
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw new StoreUnavailableError(operation, { cause: new Error('the event log is closed') });
  }
}

/** Chancery's own errors (conflicts, a schema too new) pass; a driver's error means the database failed us. */
function unavailable(operation: string, error: unknown): Error {
  return error instanceof ChanceryError ? error : new StoreUnavailableError(operation, { cause: error });
}

function columnsOf(key: ResourceKey): { resource_type: string; mesh: string; name: string } {
  return { resource_type: key.type, mesh: key.mesh, name: key.name };
}

/** `[[type, mesh, name, version, live], …]` from READ_HEADS, by key id. */
function headsOf(value: unknown): Map<string, KeyState> {
  const heads = new Map<string, KeyState>();
  for (const [type, mesh, name, version, live] of value as [ResourceType, string, string, number, boolean][]) {
    heads.set(keyIdOf({ type, mesh, name }), { version: asResourceVersion(Number(version)), live });
  }
  return heads;
}

function eventOf(row: SqlRow): ResourceEvent {
  const type = row['resource_type'] as ResourceType;
  // A type this Chancery does not know: written by a newer one, which migrations would have said.
  if (!RESOURCE_TYPES.includes(type)) throw new Error(`event ${String(row['seq'])} has unknown resource type ${String(type)}`);
  const seq = asSeq(Number(row['seq']));
  const key: ResourceKey = { type, mesh: String(row['mesh']), name: String(row['name']) };
  const version = asResourceVersion(Number(row['version']));
  const at = String(row['at']);
  const instance = String(row['instance']);
  const caller = row['caller'];
  const by: Author = caller === null || caller === undefined ? { instance } : { instance, caller: String(caller) };
  // The log stores only resources that passed validation (`Write` takes `Valid<Resource>`).
  if (row['kind'] === 'upserted') return { seq, key, version, at, by, kind: 'upserted', resource: row['body'] as Valid<Resource> };
  return { seq, key, version, at, by, kind: 'deleted' };
}
