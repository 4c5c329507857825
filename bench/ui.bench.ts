/**
 * The web UI and the sessions API with N sessions (issue 5): how long `/ui`, its files and the
 * session routes take to answer, and what the UI's live feed costs the control plane's event
 * loop. The control plane runs in its own process (support/api-server-child.ts), the N fake
 * Envoys in another (fleet.ts); this process is the browsers.
 *
 *   npm run bench -- ui [--n 1000,10000] [--repetitions 200] [--rounds 2] [--changes 3]
 *                       [--churn-percent 10] [--tabs 5] [--idle-ms 5000] [--services 50]
 *                       [--unpinned] [--cpu-prof]
 *
 * Targets (the issue): with 10,000 sessions, `/ui` and `/sessions?limit=100` answer within
 * 200 ms, and the live feed does not raise the event-loop lag p99 above 50 ms.
 */
import { readdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { FleetApi } from './fleet.js';
import type { ApiServerApi } from './support/api-server-child.js';
import { BenchChildren, canPin, serverNodeFlags } from './support/bench-children.js';
import { ChildLink } from './support/child-link.js';
import type { PhaseProfile } from './support/cpu-profile.js';
import { nodeId, type MeshShape } from './support/mesh-shape.js';
import { printHot, profileFile } from './support/print-profile.js';
import { printTable } from './support/print-table.js';
import { spread } from './support/stats.js';
import { PageFeedClient, type FeedTally, type PageBehaviour } from './support/ui-feed-client.js';
import { browserAgent, timedGet, timePageLoad, timeRoute } from './support/ui-http.js';
import { STALL_MS, type LoopLagSample } from './support/ui-loop-lag.js';
import { integerOption } from './support/integer-option.js';

interface Options {
  readonly sizes: readonly number[];
  readonly services: number;
  readonly repetitions: number;
  readonly rounds: number;
  readonly changes: number;
  readonly churnPercent: number;
  readonly tabs: number;
  readonly idleMs: number;
  readonly streamsPerConnection: number;
  readonly deadlineMs: number;
  readonly pin: boolean;
  readonly cpuProf: boolean;
}

interface RouteRow {
  readonly route: string;
  readonly instance: string;
  readonly bytes: number;
  readonly firstMs: number;
  readonly ms: readonly number[];
}

interface PhaseRow {
  readonly phase: string;
  readonly round: number;
  readonly tabs: number;
  readonly lag: LoopLagSample;
  readonly feed: FeedTally;
  /** With `--cpu-prof`, phases with tabs only. */
  readonly hot: PhaseProfile | undefined;
}

interface SizeResult {
  readonly nodes: number;
  readonly churn: number;
  readonly applyMs: number;
  readonly connectMs: number;
  readonly routes: readonly RouteRow[];
  readonly routesHot: PhaseProfile | undefined;
  readonly phases: readonly PhaseRow[];
}

const SECOND = 1_000;
/** Every request's deadline, and the most one route is repeated for once `MINIMUM_REPETITIONS` are done. */
const ROUTE_BUDGET_MS = 10 * SECOND;
const MINIMUM_REPETITIONS = 20;
/** The feed sends a batch every 300 ms (src/api/session-routes.ts): a phase waits this long for its last one. */
const FEED_SETTLE_MS = 600;
/** Short, so that the nodes of a churn phase are evicted (and reported so by the feed) soon after they leave. */
const EVICTION_GRACE_MS = 2 * SECOND;
/** The web UI's files besides index.html, as the browser loads them. */
const UI_ASSETS = readdirSync(new URL('../src/api/ui/', import.meta.url))
  .filter((file) => file !== 'index.html')
  .map((file) => `/ui/${file}`);

const children = new BenchChildren();

export default async function uiBench(argv: readonly string[]): Promise<void> {
  const options = parseOptions(argv);
  printMachine('before', options);
  await children.withDeadline('ui', options.deadlineMs, async () => {
    const results: SizeResult[] = [];
    for (const nodes of options.sizes) results.push(await runSize(nodes, options));
    printMachine('after', options);
    printResults(results);
  });
}

function parseOptions(argv: readonly string[]): Options {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      n: { type: 'string', default: '1000,10000' },
      services: { type: 'string', default: '50' },
      repetitions: { type: 'string', default: '200' },
      rounds: { type: 'string', default: '2' },
      changes: { type: 'string', default: '3' },
      'churn-percent': { type: 'string', default: '10' },
      tabs: { type: 'string', default: '5' },
      'idle-ms': { type: 'string', default: '5000' },
      'streams-per-connection': { type: 'string', default: '500' },
      'deadline-s': { type: 'string', default: '900' },
      unpinned: { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
    },
  });
  return {
    sizes: values.n.split(',').map((size) => integerOption('n', size.trim(), 100, 20_000)),
    services: integerOption('services', values.services, 2, 1_000),
    repetitions: integerOption('repetitions', values.repetitions, MINIMUM_REPETITIONS, 10_000),
    rounds: integerOption('rounds', values.rounds, 1, 10),
    changes: integerOption('changes', values.changes, 1, 10),
    churnPercent: integerOption('churn-percent', values['churn-percent'], 1, 100),
    tabs: integerOption('tabs', values.tabs, 1, 50),
    idleMs: integerOption('idle-ms', values['idle-ms'], 1_000, 60_000),
    streamsPerConnection: integerOption('streams-per-connection', values['streams-per-connection'], 1, 10_000),
    deadlineMs: integerOption('deadline-s', values['deadline-s'], 60, 3_600) * SECOND,
    pin: !values.unpinned && canPin(),
    cpuProf: values['cpu-prof'],
  };
}

async function runSize(nodes: number, options: Options): Promise<SizeResult> {
  const churn = Math.ceil((nodes * options.churnPercent) / 100);
  // Dataplanes for the churning nodes too, so they are served when they come; the fleet is the first `nodes`.
  const shape: MeshShape = { nodes: nodes + churn, services: options.services };
  const pinned = (cpu: string) => (options.pin ? { cpus: cpu } : {});
  console.log(`\n[ui] N=${nodes}: starting the control plane with its HTTP API`);
  const server = children.track(ChildLink.fork<ApiServerApi>('api-server', 'support/api-server-child.ts', { nodeFlags: serverNodeFlags(), ...pinned('0') }));
  try {
    const { xds, api, readerApi } = await server.request('start', { evictionGrace: EVICTION_GRACE_MS, streamsPerConnection: options.streamsPerConnection }, 30 * SECOND);
    const base = `http://${api}`;
    console.log(`[ui] N=${nodes}: applying ${shape.nodes} dataplanes`);
    const { ms: applyMs } = await server.request('apply', { shape, concurrency: 500 }, 120 * SECOND);

    console.log(`[ui] N=${nodes}: ${nodes} dataplanes connect`);
    const fleet = children.track(ChildLink.fork<FleetApi>('fleet', 'fleet.ts', pinned('1')));
    const connectTimeout = 30 * SECOND + nodes * 6;
    const connect = await fleet.request(
      'connect',
      { address: xds, shape, nodes: { first: 0, count: nodes }, streamsPerConnection: options.streamsPerConnection, timeoutMs: connectTimeout },
      connectTimeout + 10 * SECOND,
    );
    const connectMs = Math.max(...connect.complete) - connect.startedAt;
    // The first session records are saved within a second (recordInterval): the other instance reads them.
    await waitForSessions(`http://${readerApi}/sessions?scope=fleet&limit=1`, nodes, 30 * SECOND);

    console.log(`[ui] N=${nodes}: timing the routes`);
    if (options.cpuProf) await server.request('profileStart', null, 10 * SECOND);
    const routes = await timeRoutes(base, `http://${readerApi}`, nodes, options);
    const routesHot = options.cpuProf ? await server.request('profileStop', { top: 25, file: profileFile(`ui-routes-${nodes}`) }, 30 * SECOND) : undefined;

    const watched = nodeId(Math.floor(nodes / 2));
    const phases: PhaseRow[] = [];
    // Without and with tabs, `rounds` times, the order swapped each round (a later phase finds a
    // larger heap): the difference is the feed's, the spread the machine's. `prepare` runs before
    // each phase, outside it; `body` is the phase, given what `prepare` made.
    const pair = async <T>(name: string, prepare: () => Promise<T>, body: (prepared: T) => Promise<void>) => {
      for (let round = 1; round <= options.rounds; round++) {
        for (const withTabs of round % 2 === 1 ? [false, true] : [true, false]) {
          const prepared = await prepare();
          const profile = options.cpuProf && withTabs ? `ui-${name.replaceAll(/\W+/g, '-')}-${round}-${nodes}` : undefined;
          phases.push(await runPhase({ server, base, node: watched, phase: name, round, tabs: withTabs ? options.tabs : 0, profile }, () => body(prepared)));
        }
      }
    };
    const nothing = async () => undefined;
    console.log(`[ui] N=${nodes}: event-loop lag, idle`);
    await pair('idle', nothing, () => sleep(options.idleMs));

    let change = 0;
    console.log(`[ui] N=${nodes}: event-loop lag, ${options.changes} store changes every node depends on`);
    await pair(`${options.changes} changes, all ${nodes} sessions`, nothing, async () => {
      for (let i = 0; i < options.changes; i++) {
        await fleet.request('expectChange', { type: 'EDS' }, 10 * SECOND);
        await server.request('change', { change: ++change }, 60 * SECOND);
        await fleet.request('awaitChange', { timeoutMs: 60 * SECOND }, 70 * SECOND);
      }
    });

    console.log(`[ui] N=${nodes}: event-loop lag, ${churn} more nodes connect, leave and are evicted`);
    await pair(
      `${churn} nodes connect and leave`,
      // A fleet child of their own, started before the phase: its start-up is not the server's business.
      async () => {
        const churning = children.track(ChildLink.fork<FleetApi>('churn-fleet', 'fleet.ts', pinned('1')));
        await churning.request('usage', null, 30 * SECOND);
        return churning;
      },
      async (churning) => {
        const timeoutMs = 30 * SECOND + churn * 6;
        const nodesOf = { first: nodes, count: churn };
        await churning.request('connect', { address: xds, shape, nodes: nodesOf, streamsPerConnection: options.streamsPerConnection, timeoutMs }, timeoutMs + 10 * SECOND);
        await churning.request('close', null, 30 * SECOND);
        await churning.exit();
        await waitForSessions(`${base}/sessions?limit=1`, nodes, EVICTION_GRACE_MS + 30 * SECOND);
      },
    );

    await fleet.request('close', null, 30 * SECOND);
    await fleet.exit();
    await server.request('stop', null, 30 * SECOND);
    await server.exit();
    return { nodes, churn, applyMs, connectMs, routes, routesHot, phases };
  } catch (error) {
    children.killAll();
    throw new Error(`ui bench aborted at N=${nodes}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** Polls a `GET /sessions` URL until its `total` is `expected`. */
async function waitForSessions(url: string, expected: number, timeoutMs: number): Promise<void> {
  const agent = browserAgent(1);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const { status, body } = await timedGet(url, agent);
      const total = status === 200 ? (JSON.parse(body.toString('utf8')) as { total: number }).total : undefined;
      if (total === expected) return;
      if (Date.now() > deadline) throw new Error(`${url} still answers total ${total ?? `status ${status}`}, not ${expected}, after ${timeoutMs / SECOND} s`);
      await sleep(250);
    }
  } finally {
    agent.destroy();
  }
}

async function timeRoutes(base: string, readerBase: string, nodes: number, options: Options): Promise<RouteRow[]> {
  const node = encodeURIComponent(nodeId(Math.floor(nodes / 2)));
  const limits = { repetitions: options.repetitions, minimum: MINIMUM_REPETITIONS, budgetMs: ROUTE_BUDGET_MS };
  const agent = browserAgent(1);
  const rows: RouteRow[] = [];
  const time = async (route: string, instance = 'bench-a', from = base) => {
    const times = await timeRoute(`${from}${route}`, agent, limits);
    rows.push({ route, instance, bytes: times.bytes, firstMs: times.firstMs, ms: times.ms });
    return times;
  };
  try {
    await time('/ui');
    // The files, pooled: each is a few KB served from memory.
    const assets = [];
    for (const asset of UI_ASSETS) assets.push(await timeRoute(`${base}${asset}`, agent, { ...limits, repetitions: Math.ceil(options.repetitions / UI_ASSETS.length) }));
    rows.push({
      route: `/ui/* (${UI_ASSETS.length} files, each)`,
      instance: 'bench-a',
      bytes: assets.reduce((sum, asset) => sum + asset.bytes, 0),
      firstMs: Math.max(...assets.map((asset) => asset.firstMs)),
      ms: assets.flatMap((asset) => asset.ms),
    });
    rows.push(await timeFleetPage(base, options.repetitions));
    await time('/sessions?limit=100');
    await time(`/sessions?limit=100&offset=${Math.floor(nodes / 2)}`);
    await time('/sessions?limit=100&state=serving&nacking=true');
    await time('/sessions?scope=fleet&limit=100');
    await time('/sessions?scope=fleet&limit=100', 'bench-b (records)', readerBase);
    await time(`/sessions/${node}`);
    await time(`/sessions/${node}/history`);
    await time(`/sessions/${node}/xds`);
    await time('/meshes');
    await time('/statechart?format=svg');
    await time('/metrics');
    return rows;
  } finally {
    agent.destroy();
  }
}

/** The fleet page as a browser opens it: the document, then its files and first data over six connections. */
async function timeFleetPage(base: string, repetitions: number): Promise<RouteRow> {
  const data = ['/sessions?limit=100', '/meshes'];
  const agent = browserAgent(6);
  try {
    const firstMs = await timePageLoad(base, UI_ASSETS, data, agent);
    const ms: number[] = [];
    const deadline = Date.now() + ROUTE_BUDGET_MS;
    while (ms.length < Math.ceil(repetitions / 4) && (ms.length < MINIMUM_REPETITIONS || Date.now() < deadline)) ms.push(await timePageLoad(base, UI_ASSETS, data, agent));
    return { route: `fleet page: /ui, its ${UI_ASSETS.length} files, ${data.join(', ')}`, instance: 'bench-a', bytes: 0, firstMs, ms };
  } finally {
    agent.destroy();
  }
}

/** Browser tabs: `fleet` fleet pages and one node page, each refetching as the pages do. */
function tabsOf(fleet: number, node: string): PageBehaviour[] {
  const sessions = '/sessions?limit=100';
  const fleetPage: PageBehaviour = { feed: '/sessions/events', onOpen: [sessions, '/meshes'], onEvent: { sessions: [sessions], resync: [sessions] } };
  const path = `/sessions/${encodeURIComponent(node)}`;
  const nodePage: PageBehaviour = {
    feed: `/sessions/events?node=${encodeURIComponent(node)}`,
    onOpen: [path, `${path}/xds`, '/statechart?format=svg'],
    onEvent: { session: [`${path}/xds`], resync: [path, `${path}/xds`] },
  };
  return [...Array.from({ length: fleet }, () => fleetPage), nodePage];
}

interface PhaseSetup {
  readonly server: ChildLink<ApiServerApi>;
  readonly base: string;
  /** The node the node-page tab shows. */
  readonly node: string;
  readonly phase: string;
  readonly round: number;
  /** Fleet-page tabs; 0 for none (and no node page either). */
  readonly tabs: number;
  /** Profiles the server over the phase into this `.cpuprofile` name. */
  readonly profile: string | undefined;
}

/**
 * One phase: opens the tabs (when `tabs` > 0) and lets them load, then measures the server's
 * event loop while `body` runs and until the feed's last batch has been refetched.
 */
async function runPhase({ server, base, node, phase, round, tabs, profile }: PhaseSetup, body: () => Promise<void>): Promise<PhaseRow> {
  const clients = tabs === 0 ? [] : tabsOf(tabs, node).map((behaviour) => new PageFeedClient(base, behaviour));
  try {
    await Promise.all(clients.map((client) => client.open()));
    // The profiler's start and stop stall the loop: outside the lag window.
    if (profile) await server.request('profileStart', null, 10 * SECOND);
    await server.request('lagStart', null, 10 * SECOND);
    await body();
    await sleep(FEED_SETTLE_MS);
    await Promise.all(clients.map((client) => client.settled()));
    const lag = await server.request('lagStop', null, 10 * SECOND);
    const hot = profile ? await server.request('profileStop', { top: 25, file: profileFile(profile) }, 30 * SECOND) : undefined;
    const tallies = clients.map((client) => client.take());
    const events: Record<string, number> = {};
    for (const tally of tallies) for (const [name, n] of Object.entries(tally.events)) events[name] = (events[name] ?? 0) + n;
    const feed = { events, bytes: tallies.reduce((sum, tally) => sum + tally.bytes, 0), refetchMs: tallies.flatMap((tally) => tally.refetchMs) };
    return { phase, round, tabs: clients.length, lag, feed, hot };
  } finally {
    for (const client of clients) client.close();
  }
}

function printMachine(when: string, options: Options): void {
  const [one, five, fifteen] = loadavg().map((load) => load.toFixed(2));
  const cpu = cpus();
  const pinning = options.pin ? 'server pinned to CPU 0, fleets to CPU 1, this process (the browsers) not pinned' : 'not pinned';
  console.log(`[ui] ${when}: node ${process.version}, ${cpu.length} CPUs (${cpu[0]?.model ?? '?'}), ${pinning}, load average ${one} ${five} ${fifteen}`);
}

const ms = (value: number) => (Number.isNaN(value) ? '' : value < 10 ? value.toFixed(1) : value.toFixed(0));
const kb = (bytes: number) => (bytes === 0 ? '' : (bytes / 1024).toFixed(1));

function printResults(results: readonly SizeResult[]): void {
  printTable(
    'Setup',
    ['N', 'apply N + churn (s)', 'N connected, all with EDS (s)', 'churn nodes'],
    results.map((r) => [String(r.nodes), (r.applyMs / SECOND).toFixed(2), (r.connectMs / SECOND).toFixed(2), String(r.churn)]),
  );
  printTable(
    'HTTP: one request at a time over a keep-alive connection, fleet idle (time to the last byte)',
    ['N', 'route', 'instance', 'KB', 'requests', 'first (ms)', 'p50 (ms)', 'p99 (ms)', 'max (ms)'],
    results.flatMap((r) =>
      r.routes.map((row) => {
        const times = spread(row.ms);
        return [String(r.nodes), row.route, row.instance, kb(row.bytes), String(row.ms.length), ms(row.firstMs), ms(times.p50), ms(times.p99), ms(times.max)];
      }),
    ),
  );
  printTable(
    `Event loop of the control plane (monitorEventLoopDelay, 10 ms resolution: idle reads ~10 ms), and what the UI tabs got`,
    ['N', 'phase', 'round', 'tabs', 'wall (s)', 'server CPU (s)', 'lag p50 (ms)', 'p99 (ms)', 'max (ms)', `stalled > ${STALL_MS} ms (% of wall)`, 'feed events', 'feed KB', 'refetches', 'refetch p50 / p99 / max (ms)'],
    results.flatMap((r) =>
      r.phases.map(({ phase, round, tabs, lag, feed }) => {
        const refetch = spread(feed.refetchMs);
        return [
          String(r.nodes),
          phase,
          String(round),
          String(tabs),
          (lag.wallMs / SECOND).toFixed(1),
          (lag.cpuMs / SECOND).toFixed(2),
          ms(lag.p50),
          ms(lag.p99),
          ms(lag.max),
          lag.stalledPercent.toFixed(1),
          Object.entries(feed.events).map(([name, n]) => `${name} ${n}`).join(', '),
          tabs === 0 ? '' : (feed.bytes / 1024).toFixed(1),
          tabs === 0 ? '' : String(feed.refetchMs.length),
          feed.refetchMs.length === 0 ? '' : `${ms(refetch.p50)} / ${ms(refetch.p99)} / ${ms(refetch.max)}`,
        ];
      }),
    ),
  );
  const p99Of = (r: SizeResult, route: string) => spread(r.routes.find((row) => row.route === route && row.instance === 'bench-a')?.ms ?? []).p99;
  const verdict = (value: number, limit: number) => `${ms(value)} ms ${value <= limit ? 'met' : 'MISSED'}`;
  printTable(
    'Targets',
    ['N', '/ui p99 ≤ 200 ms', '/sessions?limit=100 p99 ≤ 200 ms', 'lag p99 with tabs ≤ 50 ms (worst phase)', 'lag p99 without tabs (that phase, each round)'],
    results.map((r) => {
      const withTabs = r.phases.filter((row) => row.tabs > 0);
      const worst = withTabs.reduce((a, b) => (b.lag.p99 > a.lag.p99 ? b : a));
      const baseline = r.phases.filter((row) => row.tabs === 0 && row.phase === worst.phase).map((row) => `${ms(row.lag.p99)} ms`);
      return [
        String(r.nodes),
        verdict(p99Of(r, '/ui'), 200),
        verdict(p99Of(r, '/sessions?limit=100'), 200),
        `${verdict(worst.lag.p99, 50)} (${worst.phase})`,
        baseline.join(', '),
      ];
    }),
  );
  for (const r of results) {
    printHot(`Server hot functions while the routes were timed, N=${r.nodes}`, r.routesHot);
    for (const row of r.phases) printHot(`Server hot functions, ${row.phase} with ${row.tabs} tabs, round ${row.round}, N=${r.nodes}`, row.hot);
  }
}
