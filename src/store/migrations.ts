import { StoreSchemaTooNewError } from './errors.js';
import type { SqlClient } from './sql-client.js';

/** One step of the schema. Never edit one that has shipped: add the next version. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/**
 * Advisory lock keys (the two-int form, class `CHNC`), held for one transaction each. Appends
 * take `append` (see sql-event-log.ts); starting instances take `migrations`.
 */
export const ADVISORY_LOCK = {
  migrations: 'pg_advisory_xact_lock(1128812099, 1)',
  append: 'pg_advisory_xact_lock(1128812099, 2)',
  checkpoint: 'pg_advisory_xact_lock(1128812099, 3)',
} as const;

/** The NOTIFY channel of appends: a wake-up only, whose payload is the last seq (I7). */
export const EVENTS_CHANNEL = 'chancery_events';

/**
 * The schema Postgres and PGlite share, in order.
 *
 * `events` is the log, append-only: `seq` is the store revision, the primary key and the only
 * order; `version` is the key's own version after the event (see write-plan.ts); `body` is the
 * validated resource of an upsert and NULL for a delete. `resources` holds each key's head (its
 * last version and whether it is live) so the optimistic-concurrency check reads one row per
 * key instead of the key's history; it is never compacted, so versions carry on.
 *
 * `checkpoints` (version 2) holds the newest checkpoint, at most one: the projection's live
 * resources at `seq`, in `checkpoint_resources`, kept in place of the events up to `seq`, which
 * retention deleted. Each row keeps the version, seq and time of the event that last wrote it.
 *
 * `instances` and `session_records` (version 3) say which instance serves which node (see
 * session-records.ts): each instance saves its own rows in batches; an instance not seen
 * within the ttl is deleted by whichever instance notices, and its records with it.
 *
 * `events.batch` (version 4) is the seq of the first event of the append that wrote the event:
 * the events of one write share it, so a write can be told apart from the next (issue 31:
 * rollouts and the Changes page). Events written before have none.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'events and resource heads',
    sql: `
      CREATE TABLE events (
        seq BIGINT PRIMARY KEY CHECK (seq >= 1),
        resource_type TEXT NOT NULL,
        mesh TEXT NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('upserted', 'deleted')),
        body JSONB,
        version BIGINT NOT NULL CHECK (version >= 1),
        at TIMESTAMPTZ NOT NULL,
        instance TEXT NOT NULL,
        caller TEXT,
        CHECK ((kind = 'upserted') = (body IS NOT NULL))
      );
      -- A resource's history, and what it looked like at revision R (issue 3, history API).
      CREATE INDEX events_by_key ON events (resource_type, mesh, name, seq);
      CREATE TABLE resources (
        resource_type TEXT NOT NULL,
        mesh TEXT NOT NULL,
        name TEXT NOT NULL,
        version BIGINT NOT NULL,
        live BOOLEAN NOT NULL,
        -- The key's last event.
        seq BIGINT NOT NULL,
        PRIMARY KEY (resource_type, mesh, name)
      );
    `,
  },
  {
    version: 2,
    name: 'checkpoints',
    sql: `
      CREATE TABLE checkpoints (
        seq BIGINT PRIMARY KEY CHECK (seq >= 1),
        at TIMESTAMPTZ NOT NULL,
        instance TEXT NOT NULL
      );
      CREATE TABLE checkpoint_resources (
        checkpoint BIGINT NOT NULL REFERENCES checkpoints (seq) ON DELETE CASCADE,
        resource_type TEXT NOT NULL,
        mesh TEXT NOT NULL,
        name TEXT NOT NULL,
        body JSONB NOT NULL,
        version BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (checkpoint, resource_type, mesh, name)
      );
    `,
  },
  {
    version: 3,
    name: 'instances and session records',
    sql: `
      CREATE TABLE instances (
        id TEXT PRIMARY KEY,
        xds_address TEXT NOT NULL,
        api_address TEXT,
        started_at TIMESTAMPTZ NOT NULL,
        seen_at TIMESTAMPTZ NOT NULL
      );
      CREATE TABLE session_records (
        node TEXT NOT NULL,
        instance TEXT NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
        state TEXT NOT NULL,
        since TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL,
        body JSONB NOT NULL,
        story JSONB,
        PRIMARY KEY (node, instance)
      );
      CREATE INDEX session_records_by_instance ON session_records (instance);
    `,
  },
  {
    version: 4,
    name: 'the batch of each event',
    sql: `ALTER TABLE events ADD COLUMN batch BIGINT CHECK (batch >= 1 AND batch <= seq);`,
  },
];

/**
 * Brings the schema up to date, in one transaction under an advisory lock: instances that
 * start together take turns, and each later one finds the work done. A database migrated
 * by a newer Chancery is refused with `StoreSchemaTooNewError`.
 */
export async function migrate(client: SqlClient, migrations: readonly Migration[] = MIGRATIONS): Promise<void> {
  await client.transaction(async (tx) => {
    // Its own statement, before any read: in READ COMMITTED each statement sees what was
    // committed when it started, so reads after the lock see the previous holder's work.
    await tx.query(`SELECT ${ADVISORY_LOCK.migrations}`);
    await tx.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
      )
    `);
    const rows = await tx.query('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((row) => Number(row['version'])));
    const known = migrations.at(-1)?.version ?? 0;
    const newest = Math.max(0, ...applied);
    if (newest > known) throw new StoreSchemaTooNewError(newest, known);
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
    }
  });
}
