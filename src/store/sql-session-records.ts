import type { SqlClient, SqlRow } from './sql-client.js';
import type { InstanceRecord, SessionRecord, SessionRecordBatch, SessionRecords } from './session-records.js';

/** `timestamptz` as ISO 8601 text (to the millisecond, UTC), as events carry it. */
const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** `now() - ttl`, with the ttl in ms as parameter `$n`: the store's clock decides who is alive. */
const cutoff = (n: number) => `now() - ($${n}::double precision * interval '1 millisecond')`;

// Joined: no row for the instance (new, or expired), or one of an earlier process with the
// same id (a restart within the ttl). `previous` reads the row as it was before this statement.
const SAVE_INSTANCE = `
  WITH previous AS (SELECT started_at FROM instances WHERE id = $1)
  INSERT INTO instances (id, xds_address, api_address, started_at, seen_at)
  VALUES ($1, $2, $3, $4, now())
  ON CONFLICT (id) DO UPDATE
  SET xds_address = excluded.xds_address, api_address = excluded.api_address, started_at = excluded.started_at, seen_at = now()
  RETURNING (SELECT started_at FROM previous) IS DISTINCT FROM instances.started_at AS joined`;

// Optimization: a batch is one JSON parameter, so a save costs the same round trips whatever
// its size (as appends do in sql-event-log.ts).
const UPSERT_RECORDS = `
  INSERT INTO session_records (node, instance, state, since, updated_at, body, story)
  SELECT r.node, $1, r.state, r.since, now(), r.body, r.story
  FROM jsonb_to_recordset($2::jsonb) AS r (node TEXT, state TEXT, since TIMESTAMPTZ, body JSONB, story JSONB)
  ON CONFLICT (node, instance) DO UPDATE
  SET state = excluded.state, since = excluded.since, updated_at = excluded.updated_at, body = excluded.body,
      story = coalesce(excluded.story, session_records.story)`;

const DELETE_RECORDS = `
  DELETE FROM session_records
  WHERE instance = $1 AND node IN (SELECT jsonb_array_elements_text($2::jsonb))`;

const LIST_RECORDS = `
  SELECT r.node, r.instance, r.state, ${iso('r.since')} AS since, ${iso('r.updated_at')} AS updated_at, r.body, r.story
  FROM session_records r JOIN instances i ON i.id = r.instance
  WHERE i.seen_at >= ${cutoff(1)} AND ($2::text IS NULL OR r.node = $2)
  ORDER BY r.node, r.instance`;

const LIST_INSTANCES = `
  SELECT id, xds_address, api_address, ${iso('started_at')} AS started_at, ${iso('seen_at')} AS seen_at
  FROM instances WHERE seen_at >= ${cutoff(1)} ORDER BY id`;

/**
 * Session records in Postgres or PGlite, on the event log's own client. Failures reject with
 * the error `guard` makes of them (the log's `StoreUnavailableError`).
 */
export class SqlSessionRecords implements SessionRecords {
  readonly #client: SqlClient;
  readonly #guard: <T>(operation: string, work: () => Promise<T>) => Promise<T>;

  constructor(client: SqlClient, guard: <T>(operation: string, work: () => Promise<T>) => Promise<T>) {
    this.#client = client;
    this.#guard = guard;
  }

  save({ instance, upserts, removals }: SessionRecordBatch): Promise<boolean> {
    return this.#guard(`saving ${upserts.length} session records of instance ${instance.id}`, () =>
      this.#client.transaction(async (tx) => {
        const [row] = await tx.query(SAVE_INSTANCE, [instance.id, instance.xds, instance.api ?? null, instance.startedAt]);
        const joined = row?.['joined'] === true;
        // An earlier process's records under this id are not this one's sessions.
        if (joined) await tx.query('DELETE FROM session_records WHERE instance = $1', [instance.id]);
        if (upserts.length > 0) await tx.query(UPSERT_RECORDS, [instance.id, JSON.stringify(upserts)]);
        if (removals.length > 0) await tx.query(DELETE_RECORDS, [instance.id, JSON.stringify(removals)]);
        return joined;
      }),
    );
  }

  async list(ttl: number, node?: string): Promise<readonly SessionRecord[]> {
    const rows = await this.#guard('listing session records', () => this.#client.query(LIST_RECORDS, [ttl, node ?? null]));
    return rows.map(recordOf);
  }

  async instances(ttl: number): Promise<readonly InstanceRecord[]> {
    const rows = await this.#guard('listing instances', () => this.#client.query(LIST_INSTANCES, [ttl]));
    return rows.map(instanceOf);
  }

  async expire(ttl: number): Promise<number> {
    const rows = await this.#guard('expiring dead instances', () =>
      this.#client.query(`DELETE FROM instances WHERE seen_at < ${cutoff(1)} RETURNING id`, [ttl]),
    );
    return rows.length;
  }

  async leave(instance: string): Promise<void> {
    await this.#guard(`removing instance ${instance}`, () => this.#client.query('DELETE FROM instances WHERE id = $1', [instance]));
  }
}

function recordOf(row: SqlRow): SessionRecord {
  return {
    node: String(row['node']),
    instance: String(row['instance']),
    state: String(row['state']),
    since: String(row['since']),
    updatedAt: String(row['updated_at']),
    body: row['body'],
    ...(row['story'] !== null && row['story'] !== undefined && { story: row['story'] }),
  };
}

function instanceOf(row: SqlRow): InstanceRecord {
  const api = row['api_address'];
  return {
    id: String(row['id']),
    xds: String(row['xds_address']),
    ...(typeof api === 'string' && { api }),
    startedAt: String(row['started_at']),
    seenAt: String(row['seen_at']),
  };
}
