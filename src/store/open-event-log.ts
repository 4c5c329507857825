import { UnsupportedStoreError } from './errors.js';
import { MemoryEventLog } from './memory-event-log.js';
import { PgliteClient } from './pglite-client.js';
import { PostgresClient } from './postgres-client.js';
import type { SqlClient } from './sql-client.js';
import { SqlEventLog } from './sql-event-log.js';
import type { EventLog } from './types.js';

export interface OpenEventLogOptions {
  /** This instance's id: Postgres shows it as `chancery:<instance>` in `pg_stat_activity`. */
  readonly instance: string;
  /** Stamps each event's `at`; default the system clock. */
  readonly now?: () => Date;
}

/** The forms `openEventLog` accepts, as its error lists them. */
export const STORE_SPECS = ['memory', 'pglite:<dir>', 'pglite:memory', 'postgres://…', 'postgresql://…'] as const;

/**
 * Opens the event log a store spec names (`--store`, `CHANCERY_STORE`):
 * - `memory`: a `MemoryEventLog`, gone when the process ends;
 * - `pglite:<dir>`: in-process PGlite with its data in `<dir>` (relative to the working
 *   directory), created if missing; `pglite:` or `pglite:memory` keep it in memory;
 * - `postgres://…` or `postgresql://…`: Postgres through the `pg` driver.
 *
 * The SQL logs migrate the schema before resolving. Anything else rejects with
 * `UnsupportedStoreError`; a database that cannot be reached with `StoreUnavailableError`.
 * The caller closes the log.
 *
 * @example
 * ```ts
 * const log = await openEventLog('pglite:./.chancery/data', { instance: 'cp-1' });
 * const store = createResourceStore(log, { instance: 'cp-1' });
 * await store.start();
 * // …
 * await store.close();
 * await log.close();
 * ```
 */
export async function openEventLog(spec: string, options: OpenEventLogOptions): Promise<EventLog> {
  const parsed = parseStoreSpec(spec);
  if (parsed.kind === 'memory') return new MemoryEventLog({ now: options.now });
  const client: SqlClient =
    parsed.kind === 'pglite'
      ? await PgliteClient.open(parsed.dir)
      : new PostgresClient(parsed.url, { applicationName: `chancery:${options.instance}` });
  try {
    return await SqlEventLog.open(client, { now: options.now });
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
}

/** What a store spec names; `dir` undefined is an in-memory PGlite. */
export type StoreSpec =
  | { readonly kind: 'memory' }
  | { readonly kind: 'pglite'; readonly dir: string | undefined }
  | { readonly kind: 'postgres'; readonly url: string };

/** A store spec as logs show it: a Postgres URL without its password. */
export function describeStoreSpec(spec: string): string {
  return spec.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

/** Reads a store spec without opening anything; throws `UnsupportedStoreError` for an unknown one. */
export function parseStoreSpec(spec: string): StoreSpec {
  if (spec === 'memory') return { kind: 'memory' };
  if (spec.startsWith('pglite:')) {
    const dir = spec.slice('pglite:'.length);
    return { kind: 'pglite', dir: dir === '' || dir === 'memory' ? undefined : dir };
  }
  if (spec.startsWith('postgres://') || spec.startsWith('postgresql://')) return { kind: 'postgres', url: spec };
  throw new UnsupportedStoreError(spec, STORE_SPECS);
}
