import { mkdir } from 'node:fs/promises';
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
    if (dataDir !== undefined) await mkdir(dataDir, { recursive: true });
    return new PgliteClient(await PGlite.create(dataDir));
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

function queryableOf(tx: Transaction): SqlQueryable {
  return {
    query: async (sql, params = []) => (await tx.query<SqlRow>(sql, [...params])).rows,
    exec: async (sql) => {
      await tx.exec(sql);
    },
  };
}
