/**
 * The event log (issue 3): appends per second from one writer and from 8 concurrent writers,
 * the time from an append to the change reaching a subscriber on another connection, and the
 * time a store takes to rebuild its projection from 100,000 events (and from a checkpoint plus
 * the events after it), for Postgres and PGlite.
 *
 *   npm run bench -- event-log [--backends postgres,pglite] [--seconds 5] [--rate 1000]
 *                              [--events 100000] [--url postgres://postgres@127.0.0.1:5432/test]
 *
 * Postgres: the server at --url (default DATABASE_URL, else the machine's 127.0.0.1:5432); the
 * bench makes its own databases there and drops them. PGlite: a temporary directory.
 *
 * Targets (the issue): 1,000 appends/s sustained on Postgres with the feed lag p99 under
 * 100 ms; a rebuild of 100,000 events under 5 s.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { NEVER } from 'rxjs';
import type { Dataplane, Mesh, Valid } from '../src/mesh/index.js';
import {
  createResourceStore,
  openEventLog,
  type Author,
  type EventLog,
  type ResourceStore,
  type Write,
} from '../src/store/index.js';
import { printTable } from './support/print-table.js';
import { spread, type Spread } from './support/stats.js';

type Backend = 'postgres' | 'pglite';

interface Options {
  readonly backends: readonly Backend[];
  readonly seconds: number;
  readonly rate: number;
  readonly events: number;
  readonly url: string;
}

interface Throughput {
  readonly appends: number;
  readonly perSecond: number;
  readonly latency: Spread;
}

interface FeedLag {
  readonly offered: number;
  readonly achieved: number;
  readonly lag: Spread;
}

interface Rebuild {
  readonly events: number;
  readonly resources: number;
  readonly fullMs: number;
  readonly checkpointMs: number;
  readonly checkpointEvents: number;
}

interface BackendResult {
  readonly backend: Backend;
  /** Label (writers and how they share connections), and what they did. */
  readonly appends: readonly (readonly [string, Throughput])[];
  readonly feed: FeedLag;
  readonly rebuild: Rebuild;
}

const WRITERS = 8;
const MESH = 'bench';
const author: Author = { instance: 'bench' };
const mesh = (name: string) => ({ type: 'Mesh', name }) as Valid<Mesh>;

/** A Dataplane of realistic size (one inbound, two outbounds); validated by construction. */
function dataplane(meshName: string, name: string, port: number): Valid<Dataplane> {
  const value: Dataplane = {
    type: 'Dataplane',
    mesh: meshName,
    name,
    networking: {
      address: '10.0.0.1',
      inbound: [{ port, servicePort: 9000, tags: { service: `svc-${port % 50}`, version: 'v1' } }],
      outbound: [
        { port: 20001, service: 'svc-0' },
        { port: 20002, service: `svc-${(port + 1) % 50}` },
      ],
    },
  };
  return value as Valid<Dataplane>;
}

export default async function eventLogBench(argv: readonly string[]): Promise<void> {
  const options = parseOptions(argv);
  console.log(
    `event log: ${options.backends.join(', ')}; ${options.seconds} s per throughput run, feed lag at ${options.rate} appends/s offered, ` +
      `rebuild of ${options.events} events; ${cpus().length} cores, load ${loadavg().map((n) => n.toFixed(2)).join(' ')}`,
  );
  const results: BackendResult[] = [];
  for (const backend of options.backends) {
    const workspace = await Workspace.open(backend, options.url);
    try {
      const appends: [string, Throughput][] = [];
      console.log(`\n${backend}: single writer…`);
      appends.push(['1', await measureAppends(workspace, 1, 'shared', options.seconds)]);
      if (backend === 'postgres') {
        console.log(`${backend}: ${WRITERS} writers, one connection pool each…`);
        appends.push([`${WRITERS}, a log each (${WRITERS} instances)`, await measureAppends(workspace, WRITERS, 'own', options.seconds)]);
      }
      console.log(`${backend}: ${WRITERS} writers on one log…`);
      appends.push([`${WRITERS}, one log (one instance)`, await measureAppends(workspace, WRITERS, 'shared', options.seconds)]);
      console.log(`${backend}: feed lag at ${options.rate}/s…`);
      const feed = await measureFeedLag(workspace, options.rate, options.seconds);
      console.log(`${backend}: rebuild of ${options.events} events…`);
      const rebuild = await measureRebuild(workspace, options.events);
      results.push({ backend, appends, feed, rebuild });
    } finally {
      await workspace.close();
    }
  }

  const ms = (n: number) => n.toFixed(1);
  printTable(
    'Appends (one event per append, each committed before the next of its writer)',
    ['backend', 'writers', 'appends', 'appends/s', 'append p50 ms', 'append p99 ms', 'append max ms'],
    results.flatMap(({ backend, appends }) =>
      appends.map(([writers, run]) => [
        backend,
        writers,
        String(run.appends),
        run.perSecond.toFixed(0),
        ms(run.latency.p50),
        ms(run.latency.p99),
        ms(run.latency.max),
      ]),
    ),
  );
  printTable(
    'Feed lag: from the append call to the change in the projection of a store on another connection',
    ['backend', 'offered/s', 'achieved/s', 'lag p50 ms', 'lag p99 ms', 'lag max ms'],
    results.map(({ backend, feed }) => [backend, String(feed.offered), feed.achieved.toFixed(0), ms(feed.lag.p50), ms(feed.lag.p99), ms(feed.lag.max)]),
  );
  printTable(
    'Rebuild: a new store catching up with the log (start() until ready)',
    ['backend', 'events', 'resources', 'from every event s', 'events/s', 'from checkpoint + events s', 'events after checkpoint'],
    results.map(({ backend, rebuild }) => [
      backend,
      String(rebuild.events),
      String(rebuild.resources),
      (rebuild.fullMs / 1000).toFixed(2),
      (rebuild.events / (rebuild.fullMs / 1000)).toFixed(0),
      (rebuild.checkpointMs / 1000).toFixed(2),
      String(rebuild.checkpointEvents),
    ]),
  );
}

/**
 * A fresh database per measurement, and the logs opened on it: a Postgres database made on the
 * server (dropped on close), or a PGlite directory. Each `openLog` is another connection (for
 * PGlite, another log on the one in-process database: PGlite has a single backend).
 */
class Workspace {
  readonly #backend: Backend;
  readonly #url: string;
  readonly #cleanups: (() => Promise<void>)[] = [];
  #pglite: string | undefined;
  #opened: EventLog[] = [];

  private constructor(backend: Backend, url: string) {
    this.#backend = backend;
    this.#url = url;
  }

  static async open(backend: Backend, url: string): Promise<Workspace> {
    return new Workspace(backend, url);
  }

  /** A new, empty database; returns its store spec. */
  async newDatabase(): Promise<string> {
    if (this.#backend === 'pglite') {
      const dir = await mkdtemp(path.join(tmpdir(), 'chancery-bench-pglite-'));
      this.#cleanups.push(() => rm(dir, { recursive: true, force: true }));
      this.#pglite = `pglite:${dir}`;
      return this.#pglite;
    }
    const name = `chancery_bench_${process.pid}_${this.#cleanups.length}`;
    await admin(this.#url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin(this.#url, `CREATE DATABASE ${name}`);
    this.#cleanups.push(() => admin(this.#url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    const copy = new URL(this.#url);
    copy.pathname = `/${name}`;
    return copy.toString();
  }

  /** Opens a log on `spec`. PGlite logs share the first one's client (one in-process database). */
  async openLog(spec: string, instance: string): Promise<EventLog> {
    const log = await openEventLog(spec, { instance });
    this.#opened.push(log);
    return log;
  }

  /** Closes every log opened so far (PGlite holds its directory until closed). */
  async closeLogs(): Promise<void> {
    for (const log of this.#opened.splice(0).reverse()) await log.close();
  }

  get backend(): Backend {
    return this.#backend;
  }

  async close(): Promise<void> {
    await this.closeLogs();
    for (const cleanup of this.#cleanups.splice(0)) await cleanup();
  }
}

async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * `own`: a log (its own connection pool) per writer, as separate instances would have; they
 * take turns at the database's append lock. `shared`: the writers append through one log, as
 * concurrent API calls to one instance do, and its group commit puts waiting appends in one
 * transaction. PGlite is always `shared`: it runs in this process on one backend.
 */
async function openLogs(workspace: Workspace, count: number, sharing: 'own' | 'shared'): Promise<EventLog[]> {
  const spec = await workspace.newDatabase();
  if (sharing === 'own') return Promise.all(Array.from({ length: count }, (_, i) => workspace.openLog(spec, `writer-${i}`)));
  const log = await workspace.openLog(spec, 'writer');
  return Array.from({ length: count }, () => log);
}

async function measureAppends(workspace: Workspace, writers: number, sharing: 'own' | 'shared', seconds: number): Promise<Throughput> {
  const logs = await openLogs(workspace, writers, sharing);
  await logs[0]!.append([{ kind: 'upserted', resource: mesh(MESH) }], author);
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    logs.map(async (log, w) => {
      for (let i = 0; performance.now() < deadline; i += 1) {
        const before = performance.now();
        await log.append([{ kind: 'upserted', resource: dataplane(MESH, `w${w}-${i % 500}`, 10_000 + i) }], author);
        latencies.push(performance.now() - before);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await workspace.closeLogs();
  return { appends: latencies.length, perSecond: latencies.length / elapsed, latency: spread(latencies) };
}

/**
 * Offers `rate` appends per second for `seconds`, in ticks of 10 ms, without waiting for earlier
 * appends (an open loop, as API callers would). A store on another connection follows the log
 * (NOTIFY wake-ups, the catch-up query); each seq's lag is from its append call to the first
 * projection that includes it.
 */
async function measureFeedLag(workspace: Workspace, rate: number, seconds: number): Promise<FeedLag> {
  const spec = await workspace.newDatabase();
  const writer = await workspace.openLog(spec, 'writer');
  const readerLog = workspace.backend === 'postgres' ? await workspace.openLog(spec, 'reader') : writer;
  await writer.append([{ kind: 'upserted', resource: mesh(MESH) }], author);
  const reader = createResourceStore(readerLog, { instance: 'reader', resync: NEVER });
  await reader.start();

  const arrived = new Map<number, number>();
  let seen: number = reader.projection.revision;
  const subscription = reader.projections.subscribe((projection) => {
    const now = performance.now();
    for (let seq = seen + 1; seq <= projection.revision; seq += 1) arrived.set(seq, now);
    seen = Math.max(seen, projection.revision);
  });

  const issued: Promise<{ seq: number; at: number }>[] = [];
  const perTick = rate / 100;
  const started = performance.now();
  let i = 0;
  await new Promise<void>((resolve) => {
    let owed = 0;
    const timer = setInterval(() => {
      owed += perTick;
      for (; owed >= 1; owed -= 1, i += 1) {
        const at = performance.now();
        const write: Write = { kind: 'upserted', resource: dataplane(MESH, `dp-${i % 1000}`, 10_000 + (i % 50_000)) };
        issued.push(writer.append([write], author).then(([event]) => ({ seq: event!.seq, at })));
      }
      if (performance.now() - started >= seconds * 1000) {
        clearInterval(timer);
        resolve();
      }
    }, 10);
  });
  const appended = await Promise.all(issued);
  const elapsed = (performance.now() - started) / 1000;
  const last = Math.max(...appended.map(({ seq }) => seq));
  while (seen < last) await new Promise((resolve) => setTimeout(resolve, 5));
  subscription.unsubscribe();
  await reader.close();
  await workspace.closeLogs();
  return { offered: rate, achieved: appended.length / elapsed, lag: spread(appended.map(({ seq, at }) => arrived.get(seq)! - at)) };
}

/**
 * Writes `events` events in batches of 1,000 (20 meshes × 500 dataplanes, each rewritten until
 * the count is reached), then times a new store's start on another connection: once reading
 * every event, and once more after compacting all but the last 1,000 into a checkpoint.
 */
async function measureRebuild(workspace: Workspace, events: number): Promise<Rebuild> {
  const spec = await workspace.newDatabase();
  const writer = await workspace.openLog(spec, 'writer');
  const meshes = Array.from({ length: 20 }, (_, m) => `mesh-${m}`);
  await writer.append(meshes.map((name) => ({ kind: 'upserted', resource: mesh(name) })), author);
  for (let written = meshes.length, round = 0; written < events; round += 1) {
    const batch: Write[] = [];
    for (let j = 0; j < 1_000 && written < events; j += 1, written += 1) {
      const n = round * 1_000 + j;
      batch.push({ kind: 'upserted', resource: dataplane(meshes[n % 20]!, `dp-${Math.floor(n / 20) % 500}`, 10_000 + (n % 50_000)) });
    }
    await writer.append(batch, author);
  }

  const timeStart = async (log: EventLog): Promise<{ ms: number; store: ResourceStore }> => {
    const store = createResourceStore(log, { instance: 'rebuild', resync: NEVER, compaction: NEVER });
    const started = performance.now();
    await store.start();
    return { ms: performance.now() - started, store };
  };
  const readerLog = workspace.backend === 'postgres' ? await workspace.openLog(spec, 'reader') : writer;
  const full = await timeStart(readerLog);
  const resources = full.store.list('Mesh').length + full.store.list('Dataplane').length;
  await full.store.close();

  const compactor = createResourceStore(writer, { instance: 'compactor', resync: NEVER, compaction: NEVER, retention: { events: 1_000 } });
  await compactor.start();
  await compactor.close();
  const secondLog = workspace.backend === 'postgres' ? await workspace.openLog(spec, 'reader-2') : writer;
  const fromCheckpoint = await timeStart(secondLog);
  if (fromCheckpoint.store.list('Dataplane').length + meshes.length !== resources) throw new Error('the checkpoint rebuilt different resources');
  await fromCheckpoint.store.close();
  await workspace.closeLogs();
  return { events, resources, fullMs: full.ms, checkpointMs: fromCheckpoint.ms, checkpointEvents: 1_000 };
}

function parseOptions(argv: readonly string[]): Options {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      backends: { type: 'string', default: 'postgres,pglite' },
      seconds: { type: 'string', default: '5' },
      rate: { type: 'string', default: '1000' },
      events: { type: 'string', default: '100000' },
      url: { type: 'string', default: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test' },
    },
    strict: true,
  });
  const backends = values.backends.split(',').map((name) => {
    if (name !== 'postgres' && name !== 'pglite') throw new Error(`--backends: unknown backend ${name}; use postgres, pglite`);
    return name;
  });
  return { backends, seconds: Number(values.seconds), rate: Number(values.rate), events: Number(values.events), url: values.url };
}
