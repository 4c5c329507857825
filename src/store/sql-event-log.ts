import { Subject, type Observable } from 'rxjs';
import { ChanceryError } from '../common/index.js';
import { isMeshScoped, keyOf, RESOURCE_TYPES, resourceJson, type Resource, type ResourceKey, type ResourceType, type Valid } from '../mesh/index.js';
import { describeKey } from './describe-key.js';
import { RevisionCompactedError, StoreRejectedWriteError, StoreUnavailableError } from './errors.js';
import { ADVISORY_LOCK, EVENTS_CHANNEL, migrate } from './migrations.js';
import type { SqlClient, SqlRow } from './sql-client.js';
import { SqlSessionRecords } from './sql-session-records.js';
import {
  asResourceVersion,
  asSeq,
  type AppendOptions,
  type Author,
  type Checkpoint,
  type EventLog,
  type KeyHistory,
  type ResourceEvent,
  type Seq,
  type Stored,
  type Write,
} from './types.js';
import { isMemberOf, keyIdOf, keysToRead, meshesDeleted, planGroup, type KeyHead } from './write-plan.js';

export interface SqlEventLogOptions {
  /** Stamps each event's `at`; default the system clock. */
  readonly now?: () => Date;
  /** Whether `close()` closes the client too; default true. */
  readonly ownsClient?: boolean;
}

// Optimization: each append sends its batch as one JSON parameter, unpacked by
// jsonb_to_recordset, so a batch costs the same round trips whatever its size, and no driver
// has to serialise arrays (pg and PGlite do that differently).

/** Where the retained history starts: the newest checkpoint's seq, 0 without one. */
/** The types deleted with their mesh, as a SQL list of literals. */
const MESH_SCOPED_TYPES = RESOURCE_TYPES.filter(isMeshScoped)
  .map((type) => `'${type}'`)
  .join(', ');

const HORIZON = '(SELECT coalesce(max(seq), 0) AS horizon FROM checkpoints)';

/** `at` as the ISO 8601 text events carry (to the millisecond, UTC). */
const atText = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Read under the append lock: the last seq (a checkpoint may have taken every event with it,
 * so then the checkpoint's), the heads of the batch's keys ($1), and what lives in each mesh
 * the batch deletes ($2), which is deleted with it.
 */
const READ_HEADS = `
  SELECT
    greatest((SELECT coalesce(max(seq), 0) FROM events), (SELECT coalesce(max(seq), 0) FROM checkpoints)) AS last,
    (SELECT coalesce(jsonb_agg(jsonb_build_array(r.resource_type, r.mesh, r.name, r.version, r.live)), '[]'::jsonb)
       FROM resources r
       JOIN jsonb_to_recordset($1::text::jsonb) AS k(resource_type text, mesh text, name text)
         ON r.resource_type = k.resource_type AND r.mesh = k.mesh AND r.name = k.name) AS heads`;

/** READ_HEADS, and what lives in the meshes ($2) a group deletes; most groups delete none. */
const READ_HEADS_AND_CONTENTS = `
  ${READ_HEADS},
    (SELECT coalesce(jsonb_agg(jsonb_build_array(r.resource_type, r.mesh, r.name, r.version, r.live)), '[]'::jsonb)
       FROM resources r
      WHERE r.resource_type IN (${MESH_SCOPED_TYPES}) AND r.live
        AND r.mesh IN (SELECT jsonb_array_elements_text($2::text::jsonb))) AS contents`;

/** Appends the events, moves the heads, and wakes readers at commit (NOTIFY is delivered then). */
const WRITE_EVENTS = `
  WITH appended AS (
    INSERT INTO events (seq, resource_type, mesh, name, kind, body, version, at, instance, caller, batch)
    SELECT e.seq, e.resource_type, e.mesh, e.name, e.kind, e.body, e.version, e.at, e.instance, e.caller, e.batch
      FROM jsonb_to_recordset($1::text::jsonb)
        AS e(seq bigint, resource_type text, mesh text, name text, kind text, body jsonb, version bigint,
             at timestamptz, instance text, caller text, batch bigint)
  ), heads AS (
    INSERT INTO resources (resource_type, mesh, name, version, live, seq)
    SELECT h.resource_type, h.mesh, h.name, h.version, h.live, h.seq
      FROM jsonb_to_recordset($2::text::jsonb)
        AS h(resource_type text, mesh text, name text, version bigint, live boolean, seq bigint)
    ON CONFLICT (resource_type, mesh, name)
      DO UPDATE SET version = excluded.version, live = excluded.live, seq = excluded.seq
  )
  SELECT pg_notify('${EVENTS_CHANNEL}', $3::text)`;

// Each read that depends on the horizon reads it in the same statement, so it sees one
// snapshot: a checkpoint committed meanwhile cannot slip between the two.

const EVENT_COLUMNS = `e.seq, e.resource_type, e.mesh, e.name, e.kind, e.body, e.version, ${atText('e.at')} AS at, e.instance, e.caller, e.batch`;

/** One row even when no event matches (event columns NULL), so the horizon is always read. */
const READ_AFTER = `
  SELECT h.horizon, ${EVENT_COLUMNS}
    FROM ${HORIZON} h
    LEFT JOIN LATERAL (
      SELECT * FROM events WHERE seq > $1::bigint ORDER BY seq LIMIT $2::integer
    ) e ON true
   ORDER BY e.seq`;

/** A key's events, through the events_by_key index. */
const READ_KEY = `
  SELECT h.horizon, ${EVENT_COLUMNS}
    FROM ${HORIZON} h
    LEFT JOIN LATERAL (
      SELECT * FROM events
       WHERE resource_type = $1::text AND mesh = $2::text AND name = $3::text AND seq > $4::bigint
       ORDER BY seq LIMIT $5::integer
    ) e ON true
   ORDER BY e.seq`;

/**
 * A key at a revision: its last event at or before it, else the checkpoint's copy. Retained
 * events come after the checkpoint, so the newer of the two is the event whenever there is one.
 */
const READ_AT = `
  SELECT h.horizon, r.kind, r.body, r.version, r.seq, ${atText('r.at')} AS at
    FROM ${HORIZON} h
    LEFT JOIN LATERAL (
      (SELECT kind, body, version, seq, at FROM events
        WHERE resource_type = $1::text AND mesh = $2::text AND name = $3::text AND seq <= $4::bigint
        ORDER BY seq DESC LIMIT 1)
      UNION ALL
      (SELECT 'upserted', body, version, seq, at FROM checkpoint_resources
        WHERE checkpoint = h.horizon AND resource_type = $1::text AND mesh = $2::text AND name = $3::text)
      ORDER BY seq DESC LIMIT 1
    ) r ON true`;

const READ_CHECKPOINT = `
  SELECT h.horizon, c.resource_type, c.mesh, c.name, c.body, c.version, c.seq, ${atText('c.at')} AS at
    FROM ${HORIZON} h
    LEFT JOIN checkpoint_resources c ON c.checkpoint = h.horizon
   ORDER BY c.seq`;

const READ_BOUNDS = `SELECT (SELECT coalesce(max(seq), 0) FROM checkpoints) AS horizon, (SELECT coalesce(max(seq), 0) FROM events) AS last`;

const INSERT_CHECKPOINT_RESOURCES = `
  INSERT INTO checkpoint_resources (checkpoint, resource_type, mesh, name, body, version, seq, at)
  SELECT $1::bigint, r.resource_type, r.mesh, r.name, r.body, r.version, r.seq, r.at
    FROM jsonb_to_recordset($2::text::jsonb)
      AS r(resource_type text, mesh text, name text, body jsonb, version bigint, seq bigint, at timestamptz)`;

/** The most events one group-commit transaction carries (a larger batch goes alone). */
const MAX_GROUP_EVENTS = 1_000;

/** An append waiting for its group's transaction. */
interface Pending {
  readonly writes: readonly Write[];
  readonly options: AppendOptions;
  readonly by: Author;
  readonly at: string;
  resolve(events: readonly ResourceEvent[]): void;
  reject(error: unknown): void;
}

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
 * is that appends to one database are serial; group commit (`append`) makes each turn carry
 * every append this log has waiting, and `bench/event-log.bench.ts` measures it.
 */
export class SqlEventLog implements EventLog {
  readonly #client: SqlClient;
  readonly #queue: Pending[] = [];
  #draining = false;
  #drained: Promise<void> = Promise.resolve();
  readonly #now: () => Date;
  readonly #ownsClient: boolean;
  readonly #wakeups = new Subject<void>();
  readonly wakeups: Observable<void> = this.#wakeups.asObservable();
  readonly sessionRecords: SqlSessionRecords;
  #unlisten: (() => Promise<void>) | undefined;
  #closed = false;

  private constructor(client: SqlClient, options: SqlEventLogOptions) {
    this.#client = client;
    this.sessionRecords = new SqlSessionRecords(client, async (operation, work) => {
      this.#assertOpen(operation);
      try {
        return await work();
      } catch (error) {
        throw unavailable(operation, error);
      }
    });
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

  async append(writes: readonly Write[], author: Author, options: AppendOptions = {}): Promise<readonly ResourceEvent[]> {
    this.#assertOpen(`appending ${writes.length} events`);
    if (writes.length === 0 && options.atRevision === undefined) return [];
    const by: Author = author.caller === undefined ? { instance: author.instance } : { instance: author.instance, caller: author.caller };
    return new Promise((resolve, reject) => {
      this.#queue.push({ writes, options, by, at: this.#now().toISOString(), resolve, reject });
      if (!this.#draining) {
        this.#draining = true;
        this.#drained = this.#drain();
      }
    });
  }

  /**
   * Group commit: appends that arrive while a transaction runs wait for it, then go together
   * in the next one, which takes the lock, reads the heads and commits once for all of them.
   * Appends to one database are serial under the lock anyway (see the class comment); this
   * makes each turn carry every append waiting for it (bench/event-log.bench.ts).
   */
  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const group: Pending[] = [];
        let events = 0;
        while (this.#queue.length > 0 && (group.length === 0 || events + this.#queue[0]!.writes.length <= MAX_GROUP_EVENTS)) {
          const next = this.#queue.shift()!;
          events += next.writes.length;
          group.push(next);
        }
        await this.#appendGroup(group);
      }
    } finally {
      // In the same turn as the last look at the queue: an append after it starts a new drain.
      this.#draining = false;
    }
  }

  /** Appends a group in one transaction; settles each append with its events or its own error. */
  async #appendGroup(group: readonly Pending[]): Promise<void> {
    const keys = new Map<string, ReturnType<typeof columnsOf>>();
    for (const { writes } of group) for (const key of keysToRead(writes)) keys.set(keyIdOf(key), columnsOf(key));
    const meshes = [...new Set(group.flatMap(({ writes }) => meshesDeleted(writes)))];
    let outcomes: readonly (readonly ResourceEvent[] | Error)[];
    try {
      outcomes = await this.#client.transaction(async (tx) => {
        // Alone in its statement: in READ COMMITTED a statement reads what was committed when
        // it started, so only statements after this one see the previous holder's commit.
        await tx.query(`SELECT ${ADVISORY_LOCK.append}`);
        const keysJson = JSON.stringify([...keys.values()]);
        const [row] = await (meshes.length === 0
          ? tx.query(READ_HEADS, [keysJson])
          : tx.query(READ_HEADS_AND_CONTENTS, [keysJson, JSON.stringify(meshes)]));
        const states = headsOf(row?.['heads']);
        const contents = headsOf(row?.['contents'] ?? []);
        // Each batch is checked as if appended alone, after the accepted ones before it; one
        // that fails (VersionConflictError, NotFoundError, MeshNotFoundError) is left out.
        const plan = planGroup(
          group.map(({ writes, options }) => ({ writes, options })),
          {
            last: asSeq(Number(row?.['last'] ?? 0)),
            head: (id) => states.get(id) ?? contents.get(id),
            liveMembers: (mesh) => [...contents.values()].filter((head) => isMemberOf(head.key, mesh)),
          },
        );
        let seq = Number(row?.['last'] ?? 0);
        const rows: object[] = [];
        const lastSeqOf = new Map<string, Seq>();
        const results = plan.outcomes.map((outcome, index): readonly ResourceEvent[] | Error => {
          if (outcome instanceof Error) return outcome;
          const { at, by } = group[index]!;
          const batch = asSeq(seq + 1);
          return outcome.events.map(({ write, key, version }): ResourceEvent => {
            const event: ResourceEvent =
              write.kind === 'upserted'
                ? { seq: asSeq((seq += 1)), key, version, at, by, batch, kind: 'upserted', resource: write.resource }
                : { seq: asSeq((seq += 1)), key, version, at, by, batch, kind: 'deleted' };
            lastSeqOf.set(keyIdOf(key), event.seq);
            // An event's body is its resource's chancery.v1 message in the proto3 JSON mapping (proto/).
            const body = event.kind === 'upserted' ? resourceJson(event.resource) : null;
            rows.push({ seq: event.seq, ...columnsOf(key), kind: event.kind, body, version, at, instance: by.instance, caller: by.caller ?? null, batch });
            return event;
          });
        });
        if (rows.length > 0) {
          const heads = [...plan.heads].map(([id, { key, version, live }]) => ({ ...columnsOf(key), version, live, seq: lastSeqOf.get(id) }));
          await tx.query(WRITE_EVENTS, [JSON.stringify(rows), JSON.stringify(heads), String(seq)]);
        }
        return results;
      });
    } catch (error) {
      // A connection lost during COMMIT leaves the outcome unknown: the writes may be in the
      // log although this rejects. A retry with its `expected` version cannot apply one twice.
      for (const pending of group) pending.reject(unavailable(`appending ${pending.writes.length} events`, error));
      return;
    }
    group.forEach((pending, index) => {
      const outcome = outcomes[index]!;
      if (outcome instanceof Error) pending.reject(outcome);
      else pending.resolve(outcome);
    });
  }

  async readAfter(after: Seq, limit: number): Promise<readonly ResourceEvent[]> {
    const rows = await this.#query(`reading events after seq ${after}`, READ_AFTER, [after, limit]);
    const horizon = horizonOf(rows);
    if (after < horizon) throw new RevisionCompactedError(after, horizon);
    return eventsOf(rows);
  }

  async readKey(key: ResourceKey, after: Seq, limit: number): Promise<KeyHistory> {
    const rows = await this.#query(`reading the history of ${describeKey(key)}`, READ_KEY, [key.type, key.mesh, key.name, after, limit]);
    return { horizon: horizonOf(rows), events: eventsOf(rows) };
  }

  async readAt(key: ResourceKey, revision: Seq): Promise<Stored<Resource> | undefined> {
    const rows = await this.#query(`reading ${describeKey(key)} at revision ${revision}`, READ_AT, [key.type, key.mesh, key.name, revision]);
    const horizon = horizonOf(rows);
    if (revision < horizon) throw new RevisionCompactedError(revision, horizon);
    const [row] = rows;
    if (row?.['kind'] !== 'upserted') return undefined;
    return storedOfRow(row);
  }

  async readCheckpoint(): Promise<Checkpoint> {
    const rows = await this.#query('reading the checkpoint', READ_CHECKPOINT, []);
    return { seq: horizonOf(rows), resources: rows.filter((row) => row['seq'] !== null).map(storedOfRow) };
  }

  async writeCheckpoint(checkpoint: Checkpoint, author: Author): Promise<Seq> {
    const { seq } = checkpoint;
    const operation = `writing a checkpoint at seq ${seq}`;
    this.#assertOpen(operation);
    const rows = checkpoint.resources.map(({ resource, version, seq: written, updatedAt }) => ({
      ...columnsOf(keyOf(resource)),
      body: resourceJson(resource),
      version,
      seq: written,
      at: updatedAt,
    }));
    try {
      return await this.#client.transaction(async (tx) => {
        // Writers of checkpoints take turns; appends go on meanwhile, past the checkpoint.
        await tx.query(`SELECT ${ADVISORY_LOCK.checkpoint}`);
        const [bounds] = await tx.query(READ_BOUNDS);
        const horizon = asSeq(Number(bounds?.['horizon'] ?? 0));
        const last = Math.max(horizon, Number(bounds?.['last'] ?? 0));
        if (seq <= horizon) return horizon;
        // A bug in the caller, not an outcome: a checkpoint folds events that exist.
        if (seq > last) throw new Error(`checkpoint at seq ${seq} is past the end of the log (${last})`);
        await tx.query('INSERT INTO checkpoints (seq, at, instance) VALUES ($1::bigint, $2::timestamptz, $3::text)', [
          seq,
          this.#now().toISOString(),
          author.instance,
        ]);
        await tx.query(INSERT_CHECKPOINT_RESOURCES, [seq, JSON.stringify(rows)]);
        // The older checkpoint's resources go with it (ON DELETE CASCADE).
        await tx.query('DELETE FROM checkpoints WHERE seq < $1::bigint', [seq]);
        await tx.query('DELETE FROM events WHERE seq <= $1::bigint', [seq]);
        return seq;
      });
    } catch (error) {
      throw unavailable(operation, error);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Appends accepted before close are committed (or refused) before the client goes.
    await this.#drained;
    this.#wakeups.complete();
    try {
      await this.#unlisten?.();
    } finally {
      if (this.#ownsClient) await this.#client.close();
    }
  }

  async #query(operation: string, sql: string, params: readonly unknown[]): Promise<readonly SqlRow[]> {
    this.#assertOpen(operation);
    try {
      return await this.#client.query(sql, params);
    } catch (error) {
      throw unavailable(operation, error);
    }
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw new StoreUnavailableError(operation, { cause: new Error('the event log is closed') });
  }
}

/**
 * Chancery's own errors (conflicts, a schema too new) pass; a data exception means the database
 * refused a value; any other driver error means the database failed us.
 */
function unavailable(operation: string, error: unknown): Error {
  if (error instanceof ChanceryError) return error;
  return isDataException(error) ? new StoreRejectedWriteError(operation, { cause: error }) : new StoreUnavailableError(operation, { cause: error });
}

/** SQLSTATE class 22, "data exception", which pg and PGlite both report as `code`. */
function isDataException(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code);
}

function columnsOf(key: ResourceKey): { resource_type: string; mesh: string; name: string } {
  return { resource_type: key.type, mesh: key.mesh, name: key.name };
}

/** `[[type, mesh, name, version, live], …]` from READ_HEADS, by key id. */
function headsOf(value: unknown): Map<string, KeyHead> {
  const heads = new Map<string, KeyHead>();
  for (const [type, mesh, name, version, live] of value as [ResourceType, string, string, number, boolean][]) {
    const key: ResourceKey = { type, mesh, name };
    heads.set(keyIdOf(key), { key, version: asResourceVersion(Number(version)), live });
  }
  return heads;
}

/** The horizon every history read returns on each row (and on its one row when nothing matched). */
function horizonOf(rows: readonly SqlRow[]): Seq {
  return asSeq(Number(rows[0]?.['horizon'] ?? 0));
}

/** The events of a read whose LEFT JOIN yields one all-NULL row when no event matched. */
function eventsOf(rows: readonly SqlRow[]): ResourceEvent[] {
  return rows.filter((row) => row['seq'] !== null).map(eventOf);
}

/** A checkpoint row, or the answer of READ_AT, as what the store holds. */
function storedOfRow(row: SqlRow): Stored<Resource> {
  // Only validated resources are stored: events and checkpoints both come from `Valid` ones.
  return {
    resource: upcast(row['body'] as Valid<Resource>),
    version: asResourceVersion(Number(row['version'])),
    seq: asSeq(Number(row['seq'])),
    updatedAt: String(row['at']),
  };
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
  // Events written before batches were recorded (schema version 4) have none.
  const batch = row['batch'] === null || row['batch'] === undefined ? {} : { batch: asSeq(Number(row['batch'])) };
  // The log stores only resources that passed validation (`Write` takes `Valid<Resource>`).
  if (row['kind'] === 'upserted') return { seq, key, version, at, by, ...batch, kind: 'upserted', resource: upcast(row['body'] as Valid<Resource>) };
  return { seq, key, version, at, by, ...batch, kind: 'deleted' };
}

/**
 * A stored body as this Chancery reads it: a Mesh written before meshes said how their
 * dataplanes authenticate was open to any, so it reads as `dataplaneAuth: none`.
 */
function upcast(resource: Valid<Resource>): Valid<Resource> {
  return resource.type === 'Mesh' && resource.dataplaneAuth === undefined ? { ...resource, dataplaneAuth: 'none' } : resource;
}
