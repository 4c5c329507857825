import pg from 'pg';
import { NEVER } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ChangeFeed } from '../../src/store/change-feed.js';
import { ADVISORY_LOCK, EVENTS_CHANNEL } from '../../src/store/migrations.js';
import { openEventLog } from '../../src/store/open-event-log.js';
import { asSeq, type Author, type EventLog, type ResourceEvent, type Seq, type Write } from '../../src/store/types.js';
import { author, mesh } from './fixtures.js';
import { sql, startTestPostgres, untilServerSays, type TestPostgres } from './test-postgres.js';

let postgres: TestPostgres;
const closables: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  postgres = await startTestPostgres();
});

afterEach(async () => {
  for (const closable of closables.splice(0).reverse()) await closable.close();
});

afterAll(async () => {
  await postgres?.stop();
});

async function open(url: string, instance: string): Promise<EventLog> {
  const log = await openEventLog(url, { instance });
  closables.push(log);
  return log;
}

/** The log, with every event its reader was handed, in the order it was handed them. */
function recording(log: EventLog): { readonly log: EventLog; readonly read: ResourceEvent[] } {
  const read: ResourceEvent[] = [];
  return {
    read,
    log: {
      wakeups: log.wakeups,
      append: (writes: readonly Write[], by: Author) => log.append(writes, by),
      async readAfter(after: Seq, limit: number) {
        const events = await log.readAfter(after, limit);
        read.push(...events);
        return events;
      },
      readKey: (key, after, limit) => log.readKey(key, after, limit),
      readAt: (key, revision) => log.readAt(key, revision),
      readCheckpoint: () => log.readCheckpoint(),
      writeCheckpoint: (checkpoint, by) => log.writeCheckpoint(checkpoint, by),
      sessionRecords: log.sessionRecords,
      close: () => log.close(),
    },
  };
}

/** Opens a transaction as an append does (the lock, the next seq) and leaves it open. */
async function openAppend(url: string, name: string): Promise<{ readonly seq: number; readonly client: pg.Client }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('BEGIN');
  await client.query(`SELECT ${ADVISORY_LOCK.append}`);
  const { rows } = await client.query(
    `INSERT INTO events (seq, resource_type, mesh, name, kind, body, version, at, instance)
     SELECT coalesce(max(seq), 0) + 1, 'Mesh', $1, $1, 'upserted', jsonb_build_object('type', 'Mesh', 'name', $1::text), 1, now(), 'raw'
       FROM events
     RETURNING seq`,
    [name],
  );
  await client.query(`SELECT pg_notify('${EVENTS_CHANNEL}', $1)`, [String(rows[0].seq)]);
  return { seq: Number(rows[0].seq), client };
}

async function finish(append: { readonly client: pg.Client }, how: 'COMMIT' | 'ROLLBACK'): Promise<void> {
  await append.client.query(how);
  await append.client.end();
}

/** True once a backend of `instance` waits on an advisory lock. */
function waitingOnTheLock(url: string, instance: string): Promise<void> {
  return untilServerSays(
    url,
    `SELECT count(*) = 1 FROM pg_stat_activity
      WHERE application_name = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
    [`chancery:${instance}`],
  );
}

describe('the change feed on Postgres (I7)', () => {
  it('delivers concurrent appends from several connections in sequence order, exactly once, across a lost LISTEN connection and a rolled-back transaction', async () => {
    const url = await postgres.newDatabase();
    const subscriber = recording(await open(url, 'subscriber'));
    // No resync: only LISTEN wake-ups, and the catch-ups after a lost connection, move the feed.
    const feed = new ChangeFeed(subscriber.log, { resync: NEVER, pageSize: 7 });
    await feed.start();
    closables.push({ close: () => feed.stop() });
    const writers = await Promise.all(['w1', 'w2', 'w3'].map((instance) => open(url, instance)));
    const burst = (round: number) =>
      Promise.all(
        writers.map(async (writer, w) => {
          for (let i = 0; i < 8; i += 1) {
            const batch: Write[] = [{ kind: 'upserted', resource: mesh(`r${round}-w${w}-${i}`) }];
            if (i % 3 === 0) batch.push({ kind: 'upserted', resource: mesh(`r${round}-w${w}-${i}-b`) });
            await writer.append(batch, { instance: `w${w}` });
          }
        }),
      );

    await burst(1);
    const terminated = await sql(
      url,
      "SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE application_name = 'chancery:subscriber:listen'",
    );
    expect(terminated).toEqual([{ terminated: true }]);
    // A transaction that took a seq and notified, then rolled back, while the writers queue behind it.
    const doomed = await openAppend(url, 'doomed');
    const second = burst(2);
    await waitingOnTheLock(url, 'w1');
    await finish(doomed, 'ROLLBACK');
    await second;
    await burst(3);

    const all = await writers[0]!.readAfter(asSeq(0), 10_000);
    expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index + 1));
    expect(all.some((event) => event.key.name === 'doomed')).toBe(false);
    await feed.applied(all.at(-1)!.seq);
    expect(subscriber.read).toEqual(all);
    expect(feed.projection.meshes.size).toBe(all.length);

    // LISTEN is back by itself: a later append arrives by its notification alone.
    await untilServerSays(
      url,
      `SELECT count(*) = 1 FROM pg_stat_activity
        WHERE application_name = 'chancery:subscriber:listen' AND state = 'idle' AND query LIKE 'LISTEN%'`,
    );
    const [late] = await writers[1]!.append([{ kind: 'upserted', resource: mesh('late') }], author);
    await feed.applied(late!.seq);
    expect(subscriber.read.at(-1)).toEqual(late);
  });

  it('makes an append wait for an earlier uncommitted one and number after it, so no reader can skip a seq', async () => {
    const url = await postgres.newDatabase();
    const writer = await open(url, 'late-writer');
    const reader = await open(url, 'reader');
    const early = await openAppend(url, 'early');

    const late = writer.append([{ kind: 'upserted', resource: mesh('late') }], author);
    await waitingOnTheLock(url, 'late-writer');
    // Neither is visible yet: a reader cannot see a later seq before an earlier one commits.
    expect(await reader.readAfter(asSeq(0), 10)).toEqual([]);
    await finish(early, 'COMMIT');

    const [event] = await late;
    expect(event!.seq).toBe(early.seq + 1);
    expect((await reader.readAfter(asSeq(0), 10)).map((read) => [read.seq, read.key.name])).toEqual([
      [early.seq, 'early'],
      [early.seq + 1, 'late'],
    ]);
  });

  it('gives the seq of a rolled-back append to the next one, leaving no gap', async () => {
    const url = await postgres.newDatabase();
    const writer = await open(url, 'next-writer');
    await writer.append([{ kind: 'upserted', resource: mesh('first') }], author);
    const doomed = await openAppend(url, 'doomed');
    expect(doomed.seq).toBe(2);

    const next = writer.append([{ kind: 'upserted', resource: mesh('next') }], author);
    await waitingOnTheLock(url, 'next-writer');
    await finish(doomed, 'ROLLBACK');

    const [event] = await next;
    expect(event!.seq).toBe(2);
    expect((await writer.readAfter(asSeq(0), 10)).map((read) => read.key.name)).toEqual(['first', 'next']);
  });
});
