/**
 * A row as the SQL event log sees it: column name to value. Each driver's own row and result
 * types stay inside its client file; `sql-event-log.ts` maps these to events.
 */
export type SqlRow = Readonly<Record<string, unknown>>;

export interface SqlQueryable {
  /** Runs one statement. Parameters are numbers, strings, booleans or null. */
  query(sql: string, params?: readonly unknown[]): Promise<readonly SqlRow[]>;
  /** Runs a script of several statements without parameters (a migration). */
  exec(sql: string): Promise<void>;
}

/**
 * What the SQL event log needs from a database: implemented by `PostgresClient` (the `pg`
 * driver) and `PgliteClient` (in-process PGlite), so both run the same SQL and migrations.
 * Every method rejects with the driver's own error; the log turns those into
 * `StoreUnavailableError`.
 */
export interface SqlClient extends SqlQueryable {
  /**
   * Runs `work` in one READ COMMITTED transaction on one connection: commits when it resolves,
   * rolls back when it throws. Resolves only after COMMIT succeeded.
   */
  transaction<T>(work: (tx: SqlQueryable) => Promise<T>): Promise<T>;
  /**
   * Calls `wake` on every NOTIFY on `channel`, and also whenever notifications may have been
   * missed: when the listening connection is lost (so the reader finds out whether the
   * database is reachable) and when it is listening again. Resolves once listening; the
   * returned function stops listening.
   */
  listen(channel: string, wake: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
