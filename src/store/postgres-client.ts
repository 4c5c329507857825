import pg from 'pg';
import type { SqlClient, SqlQueryable, SqlRow } from './sql-client.js';

export interface PostgresClientOptions {
  /** Shown in `pg_stat_activity.application_name`; the LISTEN connection adds `:listen`. */
  readonly applicationName: string;
  /** Pool size; default 8. */
  readonly poolSize?: number;
  /** How long to wait for a connection before failing; default 5 s. */
  readonly connectTimeoutMs?: number;
  /** First wait before listening again after the LISTEN connection is lost; default 100 ms. */
  readonly reconnectDelayMs?: number;
  /** The wait doubles per failed attempt up to this; default 5 s. */
  readonly maxReconnectDelayMs?: number;
}

/**
 * Postgres through the `pg` driver: a pool for queries and transactions, and one dedicated
 * connection per `listen`, which reconnects by itself (kuma-lessons §4.3: the listener must
 * outlive the connection). Notifications are only wake-ups (I7); a lost connection wakes the
 * reader too, so it catches up (or finds the database down) instead of waiting for a resync.
 */
export class PostgresClient implements SqlClient {
  readonly #config: pg.ClientConfig;
  readonly #pool: pg.Pool;
  readonly #reconnectDelayMs: number;
  readonly #maxReconnectDelayMs: number;
  readonly #listeners = new Set<Listener>();
  /** Statement names by SQL text: the same text always has the same name, on every connection. */
  readonly #statementNames = new Map<string, string>();

  constructor(url: string, options: PostgresClientOptions) {
    this.#config = {
      connectionString: url,
      application_name: options.applicationName,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
      keepAlive: true,
    };
    this.#reconnectDelayMs = options.reconnectDelayMs ?? 100;
    this.#maxReconnectDelayMs = options.maxReconnectDelayMs ?? 5_000;
    this.#pool = new pg.Pool({ ...this.#config, max: options.poolSize ?? 8 });
    // An idle connection that breaks (the server restarted, a backend was terminated) is
    // dropped by the pool; without a listener its error would crash the process. The next
    // query that cannot connect rejects, and that is where the outage is reported.
    this.#pool.on('error', () => {});
  }

  async query(sql: string, params: readonly unknown[] = []): Promise<readonly SqlRow[]> {
    return (await this.#pool.query<SqlRow>(this.#statement(sql, params))).rows;
  }

  /**
   * A named statement: each connection parses and plans it once, and runs it by name after
   * that. Optimization: planning the append's statements cost about as much as running them
   * (bench/event-log.bench.ts). Behind PgBouncer in transaction mode this needs its
   * prepared-statement support (1.21+).
   */
  #statement(sql: string, params: readonly unknown[]): pg.QueryConfig {
    let name = this.#statementNames.get(sql);
    if (name === undefined) {
      name = `chancery_${this.#statementNames.size + 1}`;
      this.#statementNames.set(sql, name);
    }
    return { name, text: sql, values: [...params] };
  }

  async exec(sql: string): Promise<void> {
    await this.#pool.query(sql);
  }

  async transaction<T>(work: (tx: SqlQueryable) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    // A checked-out client has no pool listener: an error between queries must not crash us.
    let broken: Error | undefined;
    const onError = (error: Error) => (broken ??= error);
    client.on('error', onError);
    try {
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      const result = await work({
        query: async (sql, params = []) => (await client.query<SqlRow>(this.#statement(sql, params))).rows,
        exec: async (sql) => {
          await client.query(sql);
        },
      });
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (broken === undefined) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        }
      }
      throw error;
    } finally {
      client.off('error', onError);
      // Releasing with an error destroys the connection instead of pooling a broken one.
      client.release(broken);
    }
  }

  async listen(channel: string, wake: () => void): Promise<() => Promise<void>> {
    const listener = new Listener(
      { ...this.#config, application_name: `${this.#config.application_name}:listen` },
      channel,
      wake,
      this.#reconnectDelayMs,
      this.#maxReconnectDelayMs,
    );
    await listener.start();
    this.#listeners.add(listener);
    return async () => {
      this.#listeners.delete(listener);
      await listener.stop();
    };
  }

  async close(): Promise<void> {
    await Promise.all([...this.#listeners].map((listener) => listener.stop()));
    this.#listeners.clear();
    await this.#pool.end();
  }
}

/** One LISTEN connection that re-establishes itself, with exponential backoff, until stopped. */
class Listener {
  readonly #config: pg.ClientConfig;
  readonly #channel: string;
  readonly #wake: () => void;
  readonly #initialDelayMs: number;
  readonly #maxDelayMs: number;
  #delayMs: number;
  #client: pg.Client | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(config: pg.ClientConfig, channel: string, wake: () => void, initialDelayMs: number, maxDelayMs: number) {
    this.#config = config;
    this.#channel = channel;
    this.#wake = wake;
    this.#initialDelayMs = initialDelayMs;
    this.#maxDelayMs = maxDelayMs;
    this.#delayMs = initialDelayMs;
  }

  /** Listens, or rejects with the driver's error; only later losses are retried. */
  async start(): Promise<void> {
    await this.#connect();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  async #connect(): Promise<void> {
    const client = new pg.Client(this.#config);
    client.on('error', () => this.#lost(client));
    client.on('end', () => this.#lost(client));
    client.on('notification', (message) => {
      if (message.channel === this.#channel) this.#wake();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.#channel)}`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    if (this.#stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => {});
    // Notifications sent while nobody listens are gone: the reader must catch up now, and
    // again once listening resumes.
    this.#wake();
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#retry(), this.#delayMs);
    this.#timer.unref();
  }

  async #retry(): Promise<void> {
    try {
      await this.#connect();
    } catch {
      this.#delayMs = Math.min(this.#delayMs * 2, this.#maxDelayMs);
      this.#schedule();
      return;
    }
    if (this.#stopped) return;
    this.#delayMs = this.#initialDelayMs;
    this.#wake();
  }
}
