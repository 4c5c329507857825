/**
 * Sessions at scale: N Envoy dataplanes connect at once to one Chancery process, sit idle,
 * and then converge on a change every one of them depends on. Server and fleet are separate
 * processes (bench/server.ts, bench/fleet.ts) talking real gRPC over 127.0.0.1.
 *
 *   npm run bench -- sessions [--n 1000,10000] [--changes 3] [--services 50]
 *                             [--streams-per-connection 500] [--unpinned] [--cpu-prof]
 *
 * Targets (the issue): 10,000 sessions served; a change ACKed at all 10,000 within 2 s
 * (p99); under 20 KB of heap per idle session beyond the shared resource bytes.
 */
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { ChangeResult, ConnectResult, FleetApi } from './fleet.js';
import type { MemorySample, ServerApi, UsageSample } from './server.js';
import { BenchChildren, canPin } from './support/bench-children.js';
import { ChildLink } from './support/child-link.js';
import type { PhaseProfile } from './support/cpu-profile.js';
import type { MeshShape } from './support/mesh-shape.js';
import { printHot, profileFile } from './support/print-profile.js';
import { printTable } from './support/print-table.js';
import { since, spread, type Spread } from './support/stats.js';
import { integerOption } from './support/integer-option.js';

interface Options {
  readonly sizes: readonly number[];
  readonly changes: number;
  readonly services: number;
  readonly streamsPerConnection: number;
  readonly pin: boolean;
  readonly cpuProf: boolean;
  readonly idleMs: number;
  readonly deadlineMs: number;
}

interface ChangeRow {
  readonly change: number;
  /** From the change command until every session has handled `store.advanced` (generated and written its push). */
  readonly fanOutMs: number;
  /** From the change command to `cp.apply` resolving. */
  readonly applyMs: number;
  readonly ack: Spread;
  /** The first node's ACK. */
  readonly firstAckMs: number;
  readonly pushes: number;
  readonly pushesPerSecond: number;
  readonly megabytes: number;
  readonly serverCpuMs: number;
  readonly fleetCpuMs: number;
  readonly loopStallMaxMs: number;
  readonly hot: PhaseProfile | undefined;
}

interface SizeResult {
  readonly nodes: number;
  readonly connections: number;
  readonly applyMs: number;
  readonly warmMs: number;
  readonly servedAll: number;
  readonly served: Spread;
  readonly completeAll: number;
  readonly connectPushes: number;
  readonly connectCpuMs: number;
  readonly connectLoopStallMaxMs: number;
  readonly fleetCpuMs: number;
  readonly connectHot: PhaseProfile | undefined;
  readonly memory: { readonly empty: MemorySample; readonly applied: MemorySample; readonly warmed: MemorySample; readonly sessions: MemorySample };
  readonly idleCpuPercent: number;
  readonly states: Record<string, number>;
  readonly listSessionsMs: number;
  readonly changes: readonly ChangeRow[];
}

const SECOND = 1_000;

/** The server and fleet of the size being run, killed if the run fails or overstays its deadline. */
const children = new BenchChildren();

export default async function sessionsBench(argv: readonly string[]): Promise<void> {
  const options = parseOptions(argv);
  printMachine('before', options);
  await children.withDeadline('sessions', options.deadlineMs, async () => {
    const results: SizeResult[] = [];
    for (const nodes of options.sizes) results.push(await runSize(nodes, options));
    printMachine('after', options);
    printResults(results, options);
  });
}

function parseOptions(argv: readonly string[]): Options {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      n: { type: 'string', default: '1000,10000' },
      changes: { type: 'string', default: '3' },
      services: { type: 'string', default: '50' },
      'streams-per-connection': { type: 'string', default: '500' },
      'idle-ms': { type: 'string', default: '3000' },
      'deadline-s': { type: 'string', default: '600' },
      unpinned: { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
    },
  });
  const count = (name: string, value: string, max: number) => integerOption(name, value, 1, max);
  return {
    sizes: values.n.split(',').map((size) => count('n', size.trim(), 20_000)),
    changes: count('changes', values.changes, 10),
    services: count('services', values.services, 1_000),
    streamsPerConnection: count('streams-per-connection', values['streams-per-connection'], 10_000),
    idleMs: count('idle-ms', values['idle-ms'], 30_000),
    deadlineMs: count('deadline-s', values['deadline-s'], 3_600) * SECOND,
    pin: !values.unpinned && canPin(),
    cpuProf: values['cpu-prof'],
  };
}

async function runSize(nodes: number, options: Options): Promise<SizeResult> {
  const shape: MeshShape = { nodes, services: options.services };
  console.log(`\n[sessions] N=${nodes}: starting server`);
  const server = ChildLink.fork<ServerApi>('server', 'server.ts', {
    nodeFlags: ['--expose-gc', '--max-old-space-size=4096'],
    ...(options.pin && { cpus: '0' }),
  });
  children.track(server);
  let fleet: ChildLink<FleetApi> | undefined;
  try {
    const { xds } = await server.request('start', { refreshInterval: 1_000, streamsPerConnection: options.streamsPerConnection }, 30 * SECOND);
    const empty = await server.request('memory', null, 30 * SECOND);

    console.log(`[sessions] N=${nodes}: applying ${nodes} dataplanes over ${options.services} services`);
    const { ms: applyMs } = await server.request('apply', { shape, concurrency: 500 }, 120 * SECOND);
    const applied = await server.request('memory', null, 30 * SECOND);
    const { ms: warmMs } = await server.request('warm', { shape }, 60 * SECOND);
    const warmed = await server.request('memory', null, 30 * SECOND);

    console.log(`[sessions] N=${nodes}: ${nodes} dataplanes connect at once`);
    fleet = children.track(ChildLink.fork<FleetApi>('fleet', 'fleet.ts', { ...(options.pin && { cpus: '1' }) }));
    const fleetBefore = await fleet.request('usage', null, 30 * SECOND);
    const before = await server.request('usage', null, 10 * SECOND);
    if (options.cpuProf) await server.request('profileStart', null, 10 * SECOND);
    const connectTimeout = 30 * SECOND + nodes * 6;
    const connect: ConnectResult = await fleet.request(
      'connect',
      { address: xds, shape, streamsPerConnection: options.streamsPerConnection, timeoutMs: connectTimeout },
      connectTimeout + 10 * SECOND,
    );
    const connectHot = options.cpuProf ? await server.request('profileStop', { top: 25, file: profileFile(`server-connect-${nodes}`) }, 30 * SECOND) : undefined;
    const afterConnect = await server.request('usage', null, 10 * SECOND);
    const fleetAfter = await fleet.request('usage', null, 10 * SECOND);

    // Idle: only the watchdog ticks.
    await sleep(options.idleMs);
    const afterIdle = await server.request('usage', null, 10 * SECOND);
    const sessionsMemory = await server.request('memory', null, 60 * SECOND);
    const { counts: states, ms: listSessionsMs } = await server.request('sessions', null, 60 * SECOND);

    const changes: ChangeRow[] = [];
    for (let change = 1; change <= options.changes; change++) {
      console.log(`[sessions] N=${nodes}: change ${change} (one more hub endpoint)`);
      changes.push(await runChange(server, fleet, nodes, change, options));
      await sleep(500);
    }

    await fleet.request('close', null, 30 * SECOND);
    await fleet.exit();
    await server.request('stop', null, 30 * SECOND);
    await server.exit();

    const servedAll = Math.max(...since(connect.startedAt, connect.served));
    return {
      nodes,
      connections: Math.ceil(nodes / options.streamsPerConnection),
      applyMs,
      warmMs,
      servedAll,
      served: spread(since(connect.startedAt, connect.served)),
      completeAll: Math.max(...since(connect.startedAt, connect.complete)),
      connectPushes: Object.values(connect.traffic.responses).reduce((a, b) => a + b, 0),
      connectCpuMs: afterConnect.cpuMs - before.cpuMs,
      connectLoopStallMaxMs: afterConnect.loopStallMaxMs,
      fleetCpuMs: fleetAfter.cpuMs - fleetBefore.cpuMs,
      connectHot,
      memory: { empty, applied, warmed, sessions: sessionsMemory },
      idleCpuPercent: (100 * (afterIdle.cpuMs - afterConnect.cpuMs)) / (afterIdle.at - afterConnect.at),
      states,
      listSessionsMs,
      changes,
    };
  } catch (error) {
    throw new Error(`sessions bench aborted at N=${nodes}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    // Gone already after a clean run; killed after a failed one.
    children.killAll();
  }
}

async function runChange(
  server: ChildLink<ServerApi>,
  fleet: ChildLink<FleetApi>,
  nodes: number,
  change: number,
  options: Options,
): Promise<ChangeRow> {
  await fleet.request('expectChange', { type: 'EDS' }, 10 * SECOND);
  const before: UsageSample = await server.request('usage', null, 10 * SECOND);
  const fleetBefore = await fleet.request('usage', null, 10 * SECOND);
  if (options.cpuProf) await server.request('profileStart', null, 10 * SECOND);
  const { startedAt, fannedOutAt, appliedAt } = await server.request('change', { change }, 60 * SECOND);
  const result: ChangeResult = await fleet.request('awaitChange', { timeoutMs: 30 * SECOND }, 40 * SECOND);
  const hot = options.cpuProf
    ? await server.request('profileStop', { top: 25, file: profileFile(`server-change-${change}-${nodes}`) }, 30 * SECOND)
    : undefined;
  const after = await server.request('usage', null, 10 * SECOND);
  const fleetAfter = await fleet.request('usage', null, 10 * SECOND);
  const latencies = since(startedAt, result.acked);
  const last = Math.max(...latencies);
  const pushes = Object.values(result.traffic.responses).reduce((a, b) => a + b, 0);
  return {
    change,
    fanOutMs: fannedOutAt - startedAt,
    applyMs: appliedAt - startedAt,
    ack: spread(latencies),
    firstAckMs: Math.min(...latencies),
    pushes,
    pushesPerSecond: (pushes * SECOND) / last,
    megabytes: result.traffic.bytes / 1e6,
    serverCpuMs: after.cpuMs - before.cpuMs,
    fleetCpuMs: fleetAfter.cpuMs - fleetBefore.cpuMs,
    loopStallMaxMs: after.loopStallMaxMs,
    hot,
  };
}

function printMachine(when: string, options: Options): void {
  const [one, five, fifteen] = loadavg().map((load) => load.toFixed(2));
  const cpu = cpus();
  const pinning = options.pin ? 'server pinned to CPU 0, fleet to CPU 1' : 'not pinned';
  console.log(`[sessions] ${when}: node ${process.version}, ${cpu.length} CPUs (${cpu[0]?.model ?? '?'}), ${pinning}, load average ${one} ${five} ${fifteen}`);
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
const kb = (bytes: number) => (bytes / 2 ** 10).toFixed(1);
const s = (ms: number) => (ms / SECOND).toFixed(2);
const ms = (value: number) => value.toFixed(0);

function printResults(results: readonly SizeResult[], options: Options): void {
  printTable(
    'Connect storm: N dataplanes open their ADS streams at once (times from the first stream opened)',
    ['N', 'conns', 'apply N (s)', 'generate N (s)', 'all served (s)', 'served p50 / p99 (s)', '+EDS all (s)', 'pushes', 'server CPU (s)', 'loop stall max (ms)', 'fleet CPU (s)'],
    results.map((r) => [
      String(r.nodes),
      String(r.connections),
      s(r.applyMs),
      s(r.warmMs),
      s(r.servedAll),
      `${s(r.served.p50)} / ${s(r.served.p99)}`,
      s(r.completeAll),
      String(r.connectPushes),
      s(r.connectCpuMs),
      ms(r.connectLoopStallMaxMs),
      s(r.fleetCpuMs),
    ]),
  );
  printTable(
    'Memory (server, after forced GC): heap empty → N dataplanes applied → their config generated → N idle sessions',
    ['N', 'heap empty (MB)', 'applied (MB)', 'generated (MB)', 'sessions (MB)', 'heap/session (KB)', 'incl. own config (KB)', 'RSS/session (KB)', 'idle CPU (%)', 'states', 'listSessions (ms)'],
    results.map((r) => {
      const { empty, applied, warmed, sessions } = r.memory;
      return [
        String(r.nodes),
        mb(empty.heapUsed),
        mb(applied.heapUsed),
        mb(warmed.heapUsed),
        mb(sessions.heapUsed),
        kb((sessions.heapUsed - warmed.heapUsed) / r.nodes),
        kb((sessions.heapUsed - applied.heapUsed) / r.nodes),
        kb((sessions.rss - warmed.rss) / r.nodes),
        r.idleCpuPercent.toFixed(1),
        Object.entries(r.states).map(([state, count]) => `${state} ${count}`).join(', '),
        ms(r.listSessionsMs),
      ];
    }),
  );
  printTable(
    'Change: one more endpoint for the hub service every node calls; time from the change command to each node ACKing the new EDS version',
    ['N', 'change', 'fan-out (ms)', 'apply (ms)', 'first ACK (ms)', 'ACK p50 (ms)', 'p99 (ms)', 'max (ms)', 'pushes', 'pushes/s', 'MB sent', 'server CPU (ms)', 'loop stall max (ms)', 'fleet CPU (ms)'],
    results.flatMap((r) =>
      r.changes.map((c) => [
        String(r.nodes),
        String(c.change),
        ms(c.fanOutMs),
        ms(c.applyMs),
        ms(c.firstAckMs),
        ms(c.ack.p50),
        ms(c.ack.p99),
        ms(c.ack.max),
        String(c.pushes),
        ms(c.pushesPerSecond),
        c.megabytes.toFixed(1),
        ms(c.serverCpuMs),
        ms(c.loopStallMaxMs),
        ms(c.fleetCpuMs),
      ]),
    ),
  );
  const targets = results.map((r) => {
    const worstP99 = Math.max(...r.changes.map((c) => c.ack.p99));
    const perSession = (r.memory.sessions.heapUsed - r.memory.warmed.heapUsed) / r.nodes;
    return [
      String(r.nodes),
      `${r.states.serving ?? 0} / ${r.nodes} ${r.states.serving === r.nodes ? 'met' : 'MISSED'}`,
      `${ms(worstP99)} ms ${worstP99 <= 2 * SECOND ? 'met' : 'MISSED'}`,
      `${kb(perSession)} KB ${perSession < 20 * 2 ** 10 ? 'met' : 'MISSED'}`,
    ];
  });
  printTable('Targets', ['N', 'sessions serving', 'change p99 ≤ 2 s (worst change)', 'heap/idle session < 20 KB'], targets);
  if (options.cpuProf) {
    for (const r of results) {
      printHot(`Server hot functions, connect storm, N=${r.nodes}`, r.connectHot);
      const slowest = [...r.changes].sort((a, b) => b.ack.p99 - a.ack.p99)[0];
      if (slowest) printHot(`Server hot functions, change ${slowest.change}, N=${r.nodes}`, slowest.hot);
    }
  }
}
