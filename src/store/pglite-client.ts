import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import type { SqlClient, SqlQueryable, SqlRow } from './sql-client.js';

/**
 * In-process PGlite (Postgres compiled to WebAssembly) behind `SqlClient`: the default store
 * of `chancery run`. One backend serves every query in turn, so its transactions never
 * overlap, and NOTIFY reaches `db.listen` in the same process (toolchain-notes §6.1). There
 * is no connection to lose, so `listen` only ever wakes on notifications.
 */
export class PgliteClient implements SqlClient {
  readonly #db: PGlite;

  private constructor(db: PGlite) {
    this.#db = db;
  }

  /**
   * Opens the database in `dataDir` (created if missing), or in memory when `dataDir` is
   * undefined. Creating one costs seconds (initdb); reopening a directory is fast.
   */
  static async open(dataDir?: string): Promise<PgliteClient> {
    if (dataDir !== undefined) {
      await mkdir(dataDir, { recursive: true });
      if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await initdbApart(dataDir);
    }
    return new PgliteClient(await PGlite.create(dataDir, { startParams: START_PARAMS }));
  }

  async query(sql: string, params: readonly unknown[] = []): Promise<readonly SqlRow[]> {
    return (await this.#db.query<SqlRow>(sql, [...params])).rows;
  }

  async exec(sql: string): Promise<void> {
    await this.#db.exec(sql);
  }

  transaction<T>(work: (tx: SqlQueryable) => Promise<T>): Promise<T> {
    // PGlite's transactions are READ COMMITTED, Postgres's default.
    return this.#db.transaction((tx) => work(queryableOf(tx)));
  }

  async listen(channel: string, wake: () => void): Promise<() => Promise<void>> {
    const unlisten = await this.#db.listen(channel, () => wake());
    return async () => {
      if (!this.#db.closed) await unlisten();
    };
  }

  async close(): Promise<void> {
    if (!this.#db.closed) await this.#db.close();
  }
}

/**
 * Postgres's settings for the embedded store, which serves one process's control plane and
 * holds megabytes, not a server's gigabytes: PGlite starts with Postgres's defaults, sized for a
 * server (128 MB of shared buffers and room for 100 connections), and shared memory it touches
 * stays resident: with these (and `--liftoff-only`, src/cli/node-flags.ts), `npm start` on
 * PGlite idles at 165–182 MB instead of 395 (bench/idle-memory.bench.ts).
 */
const START_PARAMS = [
  ...PGlite.defaultStartParams,
  ...['shared_buffers=8MB', 'max_connections=4'].flatMap((setting) => ['-c', setting]),
];

const run = promisify(execFile);

/**
 * Creates a database in `dataDir` in a short-lived process of its own. PGlite's initdb runs a
 * second Postgres and copies its data directory through memory, half a gigabyte this process
 * would keep resident afterwards (freed, not returned: WebAssembly memories and malloc arenas);
 * a child returns all of it when it exits.
 */
async function initdbApart(dataDir: string): Promise<void> {
  const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const script = `require(${JSON.stringify(pglite)}).PGlite.create(process.argv[1], { startParams: JSON.parse(process.argv[2]) }).then((db) => db.close())`;
  await run(process.execPath, ['-e', script, dataDir, JSON.stringify(START_PARAMS)]);
}

function queryableOf(tx: Transaction): SqlQueryable {
  return {
    query: async (sql, params = []) => (await tx.query<SqlRow>(sql, [...params])).rows,
    exec: async (sql) => {
      await tx.exec(sql);
    },
  };
}
