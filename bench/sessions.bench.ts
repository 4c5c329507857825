/**
 * Sessions at scale, in the real shape of a fleet: N Envoy dataplanes, each on its own HTTP/2
 * connection, connect at once to one Chancery process, sit idle, and converge on a change every
 * one of them depends on. The same fleet then drives the ceiling (bench/ceiling-server.ts), a bare
 * grpc-js server answering with pre-encoded bytes of the sizes Chancery sent, and every row shows
 * Chancery's figure beside the ceiling's. Server, ceiling and fleet processes talk real gRPC over
 * 127.0.0.1.
 *
 *   npm run bench -- sessions [--n 1000,10000] [--protocol sotw,delta] [--changes 3]
 *                             [--services 10] [--backends 3] [--streams-per-connection 1]
 *                             [--fleet-processes 2] [--no-ceiling] [--unpinned] [--cpu-prof [--alloc-prof]]
 *                             [--storm-change] [--workers 1] [--mesh plain,policies,strict]
 *                             [--certificate-ttl-s 86400] [--pregenerate on|off]
 *
 * `--mesh` measures the same fleet under each mesh variant (support/mesh-shape.ts), one run each,
 * their rows beside each other: `plain` (the default), `policies` (HTTP outbounds with their
 * routes over RDS, and per service a 90/10 split, a timeout, a retry and a circuit breaker; its
 * runs make a policy change too, the hub's route weights rewritten, after the endpoint changes)
 * and `strict` (mesh mTLS: a certificate issued to each node, two SDS Secrets). A strict run counts
 * the certificates signed during the storm; with a `--certificate-ttl-s` short enough that the
 * renewals come after the changes (renewal is due 2/3 of the way through TTL + 10 s, less those
 * 10 s: 16.7 s after issue for 30 s), it also measures the renewal round: every node ACKing its
 * renewed Secret, and the server CPU that took.
 *
 * Targets (issue 12, N = 10,000): all served within 5 s of a connect storm; a change ACKed at
 * every node within 1 s (p99); ≤ 60 µs of server CPU per node per change; ≤ 40 KB RSS per
 * session; at least half the ceiling's speed; event-loop lag p99 ≤ 50 ms during a change; a
 * change made during the storm reaches the nodes already served as fast as without it.
 * Issue 13: a Delta change costs at most a third of the bytes of a SotW one. Mesh variants: with
 * policies within 1.2× of plain for the storm, a change's p99 and memory per session, and a policy
 * change as fast as an endpoint change (the median p99 of each kind's changes: a major collection
 * falls into one change of five to ten, whichever its kind); strict's storm within 1.5× of plain's.
 */
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { CeilingApi, ResponseSizes } from './ceiling-server.js';
import type { ConnectResult } from './fleet.js';
import type { ServerApi } from './server.js';
import { BenchChildren, canPin, serverNodeFlags } from './support/bench-children.js';
import { ChildLink, monotonicMs } from './support/child-link.js';
import type { PhaseProfile } from './support/cpu-profile.js';
import type { WireProtocol } from './support/discovery-wire.js';
import { FleetGroup } from './support/fleet-group.js';
import { integerOption } from './support/integer-option.js';
import { onOffOption } from './support/on-off-option.js';
import { MESH_VARIANTS, type ChangeKind, type MeshShape, type MeshVariant } from './support/mesh-shape.js';
import { printHot, profileFile } from './support/print-profile.js';
import { printTable } from './support/print-table.js';
import { startBenchPostgres } from './support/bench-postgres.js';
import { ApiProbe, type ProbedPath } from './support/api-probe.js';
import type { MemorySample, UsageSample } from './support/process-probes.js';
import { listenLimits, sampleListenQueue, type ListenQueueCounters } from './support/listen-queue.js';
import { since, spread, type Spread } from './support/stats.js';
import { totalBytes, type ShortType, type Traffic } from './support/traffic.js';

interface Options {
  readonly sizes: readonly number[];
  readonly protocols: readonly WireProtocol[];
  readonly changes: number;
  readonly services: number;
  readonly backends: number;
  readonly streamsPerConnection: number;
  readonly fleetProcesses: number;
  readonly ceiling: boolean;
  readonly pin: boolean;
  readonly cpuProf: boolean;
  /** With `cpuProf`: sample allocations too, freed ones included. */
  readonly allocProf: boolean;
  /** Write a change once a quarter of the storm's nodes are served, and measure it at those nodes. */
  readonly stormChange: boolean;
  readonly idleMs: number;
  readonly deadlineMs: number;
  /** Chancery's worker processes (`chancery run --workers`); more than 1 runs them on Postgres, unpinned. */
  readonly workers: number;
  /** The mesh variants, a run each for every size and protocol. */
  readonly meshes: readonly MeshVariant[];
  /** A strict mesh's `certificateTTL`, in seconds. */
  readonly certificateTtlS: number;
  /** Whether the server generates every dataplane and issues its certificate ahead of its node (`pregenerate`). */
  readonly pregenerate: boolean;
}

/** Which server a run measured. */
type Target = 'chancery' | 'ceiling';

interface StormRow {
  readonly servedAll: number;
  readonly served: Spread;
  readonly completeAll: number;
  readonly retried: number;
  /** Handshakes the kernel dropped with the accept queue full, and SYNs sent again, machine-wide during the storm. */
  readonly listen: ListenQueueCounters;
  readonly traffic: Traffic;
  readonly serverCpuMs: number;
  readonly loopStallMaxMs: number;
  readonly fleetCpuMs: number;
  /** RSS per connected session: (RSS with the sessions − RSS before they connected) / N. */
  readonly rssPerSession: number;
  /** Chancery's API, probed during the storm; the ceiling has none. */
  readonly api: readonly ProbedPath[];
  /** With `--storm-change`: the change written during the storm, at the nodes served before it. */
  readonly change: StormChange | undefined;
  readonly hot: PhaseProfile | undefined;
}

interface StormChange {
  /** Nodes that held CDS, LDS and EDS before the change was written. */
  readonly served: number;
  /** From the write until each of them ACKed the new EDS version. */
  readonly ack: Spread;
  readonly firstAckMs: number;
}

interface ChangeRow {
  readonly change: number;
  readonly kind: ChangeKind;
  readonly ack: Spread;
  readonly firstAckMs: number;
  readonly traffic: Traffic;
  readonly serverCpuMs: number;
  readonly loopStallMaxMs: number;
  readonly loopLagP99Ms: number;
  readonly fleetCpuMs: number;
  readonly hot: PhaseProfile | undefined;
}

interface Run {
  readonly target: Target;
  readonly nodes: number;
  readonly protocol: WireProtocol;
  readonly mesh: MeshVariant;
  readonly storm: StormRow;
  readonly changes: readonly ChangeRow[];
}

/** Chancery's run, with what only it has: the store and the sessions. */
interface ChanceryRun extends Run {
  readonly target: 'chancery';
  readonly applyMs: number;
  readonly warmMs: number;
  readonly memory: { readonly applied: MemorySample; readonly warmed: MemorySample; readonly sessions: MemorySample };
  readonly idleCpuPercent: number;
  readonly states: Record<string, number>;
  /** Sessions per worker, with `--workers`. */
  readonly byWorker?: readonly number[];
  /** Workload certificates issued during the storm (strict). */
  readonly certificatesInStorm: number;
  /** Strict, with a TTL short enough for it to come after the changes. */
  readonly renewal: RenewalRow | undefined;
}

/** A strict mesh's renewal round: every node issued a new certificate and ACKing the Secret holding it. */
interface RenewalRow {
  readonly renewals: number;
  /** From the first node's ACK of its renewed Secret to the last's. */
  readonly spanMs: number;
  /** Server CPU from arming the watch until the last ACK, less the idle rate over that time. */
  readonly serverCpuMs: number;
}

const SECOND = 1_000;

/** What an operator's tools ask while a storm goes on: liveness, readiness, a page of sessions. */
const API_PATHS = ['/healthz', '/readyz', '/sessions?limit=20'];

/** The servers and fleets of the run in progress, killed if it fails or overstays its deadline. */
const children = new BenchChildren();

export default async function sessionsBench(argv: readonly string[]): Promise<void> {
  const options = parseOptions(argv);
  printMachine('before', options);
  // Workers share a store between processes: Postgres, a database per run.
  const postgres = options.workers > 1 ? await startBenchPostgres() : undefined;
  if (postgres) console.log(`[sessions] ${options.workers} workers on Postgres: ${postgres.describe}`);
  await children.withDeadline('sessions', options.deadlineMs, async () => {
    const runs: Run[] = [];
    for (const nodes of options.sizes) {
      for (const protocol of options.protocols) {
        for (const mesh of options.meshes) {
          const store = await postgres?.newDatabase();
          const chancery = await runChancery(nodes, protocol, mesh, options, store);
          runs.push(chancery);
          if (options.ceiling) runs.push(await runCeiling(nodes, protocol, mesh, chancery, options));
        }
      }
    }
    printMachine('after', options);
    printResults(runs, options);
  }).finally(() => postgres?.stop());
}

function parseOptions(argv: readonly string[]): Options {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      n: { type: 'string', default: '1000,10000' },
      protocol: { type: 'string', default: 'sotw,delta' },
      changes: { type: 'string', default: '3' },
      services: { type: 'string', default: '10' },
      backends: { type: 'string', default: '3' },
      'streams-per-connection': { type: 'string', default: '1' },
      'fleet-processes': { type: 'string', default: '2' },
      'no-ceiling': { type: 'boolean', default: false },
      'idle-ms': { type: 'string', default: '3000' },
      'deadline-s': { type: 'string', default: '900' },
      unpinned: { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      'alloc-prof': { type: 'boolean', default: false },
      'storm-change': { type: 'boolean', default: false },
      workers: { type: 'string', default: '1' },
      mesh: { type: 'string', default: 'plain' },
      'certificate-ttl-s': { type: 'string', default: String(24 * 3_600) },
      pregenerate: { type: 'string', default: 'on' },
    },
  });
  const count = (name: string, value: string, min: number, max: number) => integerOption(name, value, min, max);
  const protocols = values.protocol.split(',').map((protocol) => protocol.trim());
  const unknown = protocols.filter((protocol) => protocol !== 'sotw' && protocol !== 'delta');
  if (unknown.length > 0) throw new Error(`--protocol takes sotw, delta or both (comma-separated), not "${unknown.join(',')}"`);
  const meshes = values.mesh.split(',').map((mesh) => mesh.trim());
  const unknownMeshes = meshes.filter((mesh) => !(MESH_VARIANTS as readonly string[]).includes(mesh));
  if (unknownMeshes.length > 0) throw new Error(`--mesh takes ${MESH_VARIANTS.join(', ')} (comma-separated), not "${unknownMeshes.join(',')}"`);
  const workers = count('workers', values.workers, 1, 16);
  if (workers > 1 && values['cpu-prof']) throw new Error('--cpu-prof profiles one process; run it without --workers');
  if (values['alloc-prof'] && !values['cpu-prof']) throw new Error('--alloc-prof adds allocations to the profiles of --cpu-prof; give both');
  return {
    sizes: values.n.split(',').map((size) => count('n', size.trim(), 1, 20_000)),
    protocols: protocols as WireProtocol[],
    changes: count('changes', values.changes, 1, 10),
    services: count('services', values.services, 1, 1_000),
    backends: count('backends', values.backends, 0, 100),
    streamsPerConnection: count('streams-per-connection', values['streams-per-connection'], 1, 10_000),
    fleetProcesses: count('fleet-processes', values['fleet-processes'], 1, 16),
    ceiling: !values['no-ceiling'],
    idleMs: count('idle-ms', values['idle-ms'], 0, 30_000),
    deadlineMs: count('deadline-s', values['deadline-s'], 1, 3_600) * SECOND,
    // Workers are there to use both cores: nothing is pinned.
    pin: !values.unpinned && workers === 1 && canPin(),
    cpuProf: values['cpu-prof'],
    allocProf: values['alloc-prof'],
    stormChange: values['storm-change'],
    workers,
    meshes: meshes as MeshVariant[],
    // Chancery takes 30 s to 90 days.
    certificateTtlS: count('certificate-ttl-s', values['certificate-ttl-s'], 30, 90 * 24 * 3_600),
    pregenerate: onOffOption('pregenerate', values.pregenerate),
  };
}

function shapeOf(nodes: number, mesh: MeshVariant, options: Options): MeshShape {
  // --backends 0: the hub shape, where the nodes themselves serve the services.
  return options.backends === 0 ? { nodes, services: options.services, variant: mesh } : { nodes, services: options.services, backends: options.backends, variant: mesh };
}

/** The changes a variant's runs make, in order: `--changes` of each kind. */
function changeKinds(mesh: MeshVariant): ChangeKind[] {
  return mesh === 'policies' ? ['endpoint', 'policy'] : ['endpoint'];
}

/** Names a run in logs and profile files; plain's as it was before variants. */
function runLabel(target: Target, nodes: number, protocol: WireProtocol, mesh: MeshVariant): string {
  return `${target} N=${nodes} ${protocol}${mesh === 'plain' ? '' : ` mesh=${mesh}`}`;
}

function startFleet(options: Options): FleetGroup {
  return children.track(FleetGroup.fork('fleet', options.fleetProcesses, options.pin ? { cpus: '1' } : {}));
}

/** The server child: pinned to CPU 0 beside a fleet on CPU 1, with a heap for 10,000 sessions. */
function forkServer<T extends ServerApi | CeilingApi>(name: string, script: string, options: Options): ChildLink<T> {
  return children.track(ChildLink.fork<T>(name, script, { nodeFlags: serverNodeFlags(), ...(options.pin && { cpus: '0' }) }));
}

/** The server and the fleet a storm and its changes are measured on, whichever the server. */
interface Measured {
  readonly server: ChildLink<ServerApi> | ChildLink<CeilingApi>;
  readonly fleet: FleetGroup;
  readonly label: string;
  /** The server's HTTP API, probed during the storm (Chancery only). */
  readonly api?: string;
  readonly mesh: MeshVariant;
  /** Writes change number `change` of `kind`; says when the write began. */
  readonly write: (change: number, kind: ChangeKind) => Promise<{ startedAt: number }>;
}

async function runChancery(nodes: number, protocol: WireProtocol, mesh: MeshVariant, options: Options, store: string | undefined): Promise<ChanceryRun> {
  const label = `${runLabel('chancery', nodes, protocol, mesh)}${options.workers > 1 ? ` workers=${options.workers}` : ''}`;
  const shape = shapeOf(nodes, mesh, options);
  console.log(`\n[sessions] ${label}: starting the server`);
  const server = forkServer<ServerApi>('server', 'server.ts', options);
  return measuring(label, async () => {
    const start = { refreshInterval: 1_000, streamsPerConnection: options.streamsPerConnection, api: true, workers: options.workers, pregenerate: options.pregenerate, ...(store !== undefined && { store }) };
    const { xds, api } = await server.request('start', start, 60 * SECOND);
    console.log(`[sessions] ${label}: applying ${nodes} dataplanes${shape.backends ? ` and ${shape.services * shape.backends} backends` : ''}`);
    const { ms: applyMs } = await server.request('apply', { shape, concurrency: 500, certificateTTL: `${options.certificateTtlS}s` }, 120 * SECOND);
    const applied = await server.request('memory', null, 30 * SECOND);
    const { ms: warmMs } = await server.request('warm', { shape }, 60 * SECOND);
    const warmed = await server.request('memory', null, 30 * SECOND);

    const fleet = startFleet(options);
    const write = (change: number, kind: ChangeKind) => server.request('change', { change, kind, variant: mesh }, 60 * SECOND);
    const measured: Measured = { server, fleet, label, mesh, write, ...(api !== undefined && { api }) };
    const issuedBefore = await server.request('certificates', null, 10 * SECOND);
    const storm = await runStorm(measured, xds, shape, protocol, options);
    const issuedInStorm = await server.request('certificates', null, 10 * SECOND);
    const afterStorm = await server.request('usage', null, 10 * SECOND);
    // Idle: only the watchdog ticks.
    await sleep(options.idleMs);
    const afterIdle = await server.request('usage', null, 10 * SECOND);
    const sessions = await server.request('memory', null, 60 * SECOND);
    const { counts: states, byWorker } = await server.request('sessions', null, 60 * SECOND);

    const changes = await runChanges(measured, nodes, options);
    const idleCpuPercent = (100 * (afterIdle.cpuMs - afterStorm.cpuMs)) / (afterIdle.at - afterStorm.at);
    const renewal = mesh === 'strict' && renewalDueS(options.certificateTtlS) <= MAX_RENEWAL_WAIT_S ? await runRenewal(measured, nodes, options) : undefined;
    await shutDown(measured);
    return {
      target: 'chancery',
      nodes,
      protocol,
      mesh,
      storm,
      changes,
      applyMs,
      warmMs,
      memory: { applied, warmed, sessions },
      idleCpuPercent,
      certificatesInStorm: issuedInStorm.issued - issuedBefore.issued,
      renewal,
      states,
      ...(byWorker && { byWorker }),
    };
  });
}

async function runCeiling(nodes: number, protocol: WireProtocol, mesh: MeshVariant, chancery: ChanceryRun, options: Options): Promise<Run> {
  const label = runLabel('ceiling', nodes, protocol, mesh);
  const sizes = responseSizes(chancery);
  const bytes = changeSizes(chancery);
  const described = Object.entries(sizes).map(([type, size]) => `${type} ${size}`).join(', ');
  console.log(`\n[sessions] ${label}: starting the bare grpc-js server (responses of ${described} bytes)`);
  const server = forkServer<CeilingApi>('ceiling', 'ceiling-server.ts', options);
  return measuring(label, async () => {
    const { xds } = await server.request('start', { sizes }, 30 * SECOND);
    const write = (change: number, kind: ChangeKind) => server.request('change', { change, kind, bytes: bytes[kind] }, 60 * SECOND);
    const measured: Measured = { server, fleet: startFleet(options), label, mesh, write };
    const storm = await runStorm(measured, xds, shapeOf(nodes, mesh, options), protocol, options);
    const changes = await runChanges(measured, nodes, options);
    await shutDown(measured);
    return { target: 'ceiling', nodes, protocol, mesh, storm, changes };
  });
}

/** One server's phases: an error names the run, and every child is killed after, whatever happened. */
async function measuring<T>(label: string, phases: () => Promise<T>): Promise<T> {
  try {
    return await phases();
  } catch (error) {
    throw new Error(`sessions bench aborted (${label}): ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    children.killAll();
  }
}

/** `--changes` changes of each kind the variant makes, one after another. */
async function runChanges(measured: Measured, nodes: number, options: Options): Promise<ChangeRow[]> {
  const changes: ChangeRow[] = [];
  for (const kind of changeKinds(measured.mesh)) {
    for (let change = 1; change <= options.changes; change++) changes.push(await runChange(measured, nodes, change, kind, options));
  }
  return changes;
}

/** Seconds from a certificate's issue to its renewal: 2/3 of its validity, which starts 10 s before the issue (docs/mtls.md). */
function renewalDueS(ttlS: number): number {
  return ((ttlS + 10) * 2) / 3 - 10;
}

/** A renewal round further off than this after the storm is not waited for: a TTL in hours or days is a run without one. */
const MAX_RENEWAL_WAIT_S = 600;

/**
 * A strict mesh's renewal round: once the changes are done, waits for every node to ACK a new
 * version of its Secrets (a renewed certificate), and measures the server's CPU until the last
 * ACK, less what it spends idle over that time. Fails if any renewal came before the watch was
 * armed (a TTL too short for the storm and the changes).
 */
async function runRenewal(measured: Measured, nodes: number, options: Options): Promise<RenewalRow> {
  const { fleet, label } = measured;
  const server = probe(measured.server);
  await fleet.request('expectChange', { type: 'SDS' }, 10 * SECOND);
  const early = (await server.request('certificates', null, 10 * SECOND)).renewals;
  if (early > 0) throw new Error(`${early} certificates were renewed before the changes were done: give a longer --certificate-ttl-s than ${options.certificateTtlS}`);
  console.log(`[sessions] ${label}: the renewal round (certificates renewed ${renewalDueS(options.certificateTtlS).toFixed(1)} s after issue)`);
  const timeoutMs = (renewalDueS(options.certificateTtlS) + 60) * SECOND;
  // The server's CPU sampled while the fleet waits: the round's is what it used from just before
  // its first ACK to its last, not the idle minutes before it came due.
  const samples: UsageSample[] = [await server.request('usage', null, 10 * SECOND)];
  let waiting = true;
  const sampling = (async () => {
    while (waiting) {
      await sleep(RENEWAL_SAMPLE_MS);
      samples.push(await server.request('usage', null, 10 * SECOND));
    }
  })();
  const { acked } = await fleet.request('awaitChange', { timeoutMs }, timeoutMs + 10 * SECOND);
  waiting = false;
  await sampling;
  const after = await server.request('usage', null, 10 * SECOND);
  const { renewals } = await server.request('certificates', null, 10 * SECOND);
  const first = Math.min(...acked);
  const before = samples.filter((sample) => sample.at <= first - RENEWAL_SAMPLE_MS).at(-1) ?? samples[0]!;
  return { renewals, spanMs: Math.max(...acked) - first, serverCpuMs: after.cpuMs - before.cpuMs };
}

/** How often the server's CPU is sampled while a renewal round is awaited. */
const RENEWAL_SAMPLE_MS = 500;

/** Closes the fleet, then the server, waiting for each process to exit. */
async function shutDown({ fleet, server }: Measured): Promise<void> {
  await fleet.request('close', null, 30 * SECOND);
  await fleet.exit();
  await probe(server).request('stop', null, 30 * SECOND);
  await server.exit();
}

/** The requests of a union of child links, typed by the commands both answer. */
function probe(server: Measured['server']): ChildLink<ServerApi & CeilingApi> {
  return server as ChildLink<ServerApi & CeilingApi>;
}

async function runStorm(measured: Measured, xds: string, shape: MeshShape, protocol: WireProtocol, options: Options): Promise<StormRow> {
  const { fleet, label } = measured;
  const server = probe(measured.server);
  console.log(`[sessions] ${label}: ${shape.nodes} dataplanes connect at once`);
  const rssBefore = (await server.request('memory', null, 30 * SECOND)).rss;
  const fleetBefore = await fleet.request('usage', null, 30 * SECOND);
  // The profiler's start and stop (writing the profile) outside the CPU measured.
  if (options.cpuProf) await server.request('profileStart', { allocations: options.allocProf }, 10 * SECOND);
  const before = await server.request('usage', null, 10 * SECOND);
  // A strict storm without pregeneration issues a certificate a node first (0.9 ms of CPU each: bench/README.md, certificates).
  const timeoutMs = 30 * SECOND + shape.nodes * (shape.variant === 'strict' ? 30 : 6);
  const listenBefore = sampleListenQueue();
  const apiProbe = measured.api === undefined ? undefined : new ApiProbe(measured.api, API_PATHS);
  const connecting = fleet.request('connect', { address: xds, shape, streamsPerConnection: options.streamsPerConnection, protocol, timeoutMs }, timeoutMs + 10 * SECOND);
  const duringStorm = options.stormChange ? await writeChangeDuringStorm(measured, shape.nodes, options) : undefined;
  const connect: ConnectResult = await connecting;
  const change = duringStorm && (await measureChangeDuringStorm(measured, connect, duringStorm));
  const listenAfter = sampleListenQueue();
  const api = (await apiProbe?.stop()) ?? [];
  const after: UsageSample = await server.request('usage', null, 10 * SECOND);
  const fleetAfter = await fleet.request('usage', null, 10 * SECOND);
  const hot = options.cpuProf ? await server.request('profileStop', { top: 25, file: profileFile(`${label.replaceAll(/[ =]/g, '-')}-storm`) }, 30 * SECOND) : undefined;
  const rssAfter = (await server.request('memory', null, 30 * SECOND)).rss;
  const served = since(connect.startedAt, connect.served);
  return {
    servedAll: Math.max(...served),
    served: spread(served),
    completeAll: Math.max(...since(connect.startedAt, connect.complete)),
    retried: connect.retried,
    listen: { overflows: listenAfter.overflows - listenBefore.overflows, synRetransmits: listenAfter.synRetransmits - listenBefore.synRetransmits },
    traffic: connect.traffic,
    serverCpuMs: after.cpuMs - before.cpuMs,
    loopStallMaxMs: after.loopStallMaxMs,
    fleetCpuMs: fleetAfter.cpuMs - fleetBefore.cpuMs,
    rssPerSession: (rssAfter - rssBefore) / shape.nodes,
    api,
    change,
    hot,
  };
}

/**
 * Once a quarter of the storm's nodes hold CDS, LDS and EDS, writes a change (one more endpoint
 * of the service every node calls), numbered after the run's own changes. Says when the nodes
 * served so far were counted and when the change was written.
 */
async function writeChangeDuringStorm(measured: Measured, nodes: number, options: Options): Promise<{ countedAt: number; startedAt: number }> {
  const { fleet, label } = measured;
  while ((await fleet.request('progress', null, 10 * SECOND)).complete < nodes / 4) await sleep(20);
  const countedAt = monotonicMs();
  await fleet.request('expectChange', { type: 'EDS', keepTraffic: true }, 10 * SECOND);
  console.log(`[sessions] ${label}: a change during the storm, a quarter of the nodes served`);
  const { startedAt } = await measured.write(options.changes + 1, 'endpoint');
  return { countedAt, startedAt };
}

/** The change written during the storm, at the nodes that were served before it: from the write until each ACKed it. */
async function measureChangeDuringStorm(measured: Measured, connect: ConnectResult, { countedAt, startedAt }: { countedAt: number; startedAt: number }): Promise<StormChange> {
  const { acked } = await measured.fleet.request('awaitChange', { timeoutMs: 30 * SECOND }, 40 * SECOND);
  const latencies = [...acked].filter((_, node) => connect.complete[node]! < countedAt).map((at) => at - startedAt);
  return { served: latencies.length, ack: spread(latencies), firstAckMs: Math.min(...latencies) };
}

/** What each kind of change rewrites, and the type every node ACKs a new version of. */
const CHANGES: Readonly<Record<ChangeKind, { readonly what: string; readonly type: 'EDS' | 'RDS' }>> = {
  endpoint: { what: 'one more endpoint of the service every node calls', type: 'EDS' },
  policy: { what: "the MeshHTTPRoute weights of the service every node calls", type: 'RDS' },
};

/** A change as the tables name it: an endpoint change by its number alone, as before variants; `policy 1`. */
function changeName(kind: ChangeKind, change: number): string {
  return kind === 'endpoint' ? String(change) : `${kind} ${change}`;
}

async function runChange(measured: Measured, nodes: number, change: number, kind: ChangeKind, options: Options): Promise<ChangeRow> {
  const { fleet, label } = measured;
  const server = probe(measured.server);
  console.log(`[sessions] ${label}: change ${changeName(kind, change)} (${CHANGES[kind].what})`);
  await sleep(500);
  await fleet.request('expectChange', { type: CHANGES[kind].type }, 10 * SECOND);
  // The profiler's start and stop (writing the profile) outside the CPU measured.
  if (options.cpuProf) await server.request('profileStart', { allocations: options.allocProf }, 10 * SECOND);
  const before = await server.request('usage', null, 10 * SECOND);
  const fleetBefore = await fleet.request('usage', null, 10 * SECOND);
  const { startedAt } = await measured.write(change, kind);
  // A policy change regenerates every node's routes: milliseconds of CPU a node, so its wait grows with the fleet.
  const timeoutMs = 30 * SECOND + (kind === 'policy' ? nodes * 10 : 0);
  const result = await fleet.request('awaitChange', { timeoutMs }, timeoutMs + 10 * SECOND);
  const after = await server.request('usage', null, 10 * SECOND);
  const fleetAfter = await fleet.request('usage', null, 10 * SECOND);
  const hot = options.cpuProf ? await server.request('profileStop', { top: 25, file: profileFile(`${label.replaceAll(/[ =]/g, '-')}-change-${changeName(kind, change).replace(' ', '-')}`) }, 30 * SECOND) : undefined;
  const latencies = since(startedAt, result.acked);
  return {
    change,
    kind,
    ack: spread(latencies),
    firstAckMs: Math.min(...latencies),
    traffic: result.traffic,
    serverCpuMs: after.cpuMs - before.cpuMs,
    loopStallMaxMs: after.loopStallMaxMs,
    loopLagP99Ms: after.loopLagP99Ms,
    fleetCpuMs: fleetAfter.cpuMs - fleetBefore.cpuMs,
    hot,
  };
}

/** The mean size of Chancery's responses of `type` in `traffic`, without gRPC's prefix. */
function meanResponse(type: ShortType, traffic: Traffic): number {
  return Math.max(1, Math.round(traffic.bytes[type] / Math.max(1, traffic.responses[type]) - 5));
}

/**
 * What the ceiling answers each subscription with: the mean size of Chancery's responses per type
 * it sent in the storm (a change's own size is `changeSizes`: after an ACK, an EDS or RDS
 * response carries only what changed).
 */
function responseSizes(run: ChanceryRun): ResponseSizes {
  const { storm } = run;
  const sent = (Object.keys(storm.traffic.responses) as ShortType[]).filter((type) => storm.traffic.responses[type] > 0);
  return Object.fromEntries(sent.map((type) => [type, meanResponse(type, storm.traffic)])) as ResponseSizes;
}

/** What the ceiling's change of each kind writes: the mean size of the changed type's responses in Chancery's first change of that kind. */
function changeSizes(run: ChanceryRun): Record<ChangeKind, number> {
  const first = (kind: ChangeKind) => run.changes.find((change) => change.kind === kind)?.traffic ?? run.storm.traffic;
  return { endpoint: meanResponse('EDS', first('endpoint')), policy: meanResponse('RDS', first('policy')) };
}

function printMachine(when: string, options: Options): void {
  const [one, five, fifteen] = loadavg().map((load) => load.toFixed(2));
  const cpu = cpus();
  const pinning = options.pin ? 'server pinned to CPU 0, fleet to CPU 1' : 'not pinned';
  const server = options.workers > 1 ? `, Chancery as ${options.workers} workers on Postgres (the ceiling one process)` : '';
  console.log(`[sessions] ${when}: node ${process.version}, ${cpu.length} CPUs (${cpu[0]?.model ?? '?'}), ${pinning}${server}, ${listenLimits()}, load average ${one} ${five} ${fifteen}`);
}

const kb = (bytes: number) => (bytes / 2 ** 10).toFixed(1);
const mb = (bytes: number) => (bytes / 1e6).toFixed(2);
const s = (ms: number) => (ms / SECOND).toFixed(2);
const ms = (value: number) => value.toFixed(0);
const percent = (ratio: number) => `${(100 * ratio).toFixed(0)} %`;
const pushes = (traffic: Traffic) => Object.values(traffic.responses).reduce((a, b) => a + b, 0);
const worst = <T>(rows: readonly T[], of: (row: T) => number) => Math.max(...rows.map(of));
/** First ACK, p50, p99 and max of a change, and the ceiling's p99 beside them. */
const ackCells = (firstAckMs: number, ack: Spread, ceiling: Spread | undefined) => [ms(firstAckMs), ms(ack.p50), ms(ack.p99), ms(ack.max), ceiling ? ms(ceiling.p99) : '–'];

function printResults(runs: readonly Run[], options: Options): void {
  const chancery = runs.filter((run): run is ChanceryRun => run.target === 'chancery');
  const ceilingOf = (run: Run) => runs.find((other) => other.target === 'ceiling' && other.nodes === run.nodes && other.protocol === run.protocol && other.mesh === run.mesh);
  const vs = (ours: number, theirs: number | undefined) => (theirs === undefined ? '–' : percent(theirs / ours));
  const { keyHeaders, keyOf, showMesh } = runKeys(options);

  printTable(
    `Connect storm: N dataplanes, ${options.streamsPerConnection === 1 ? 'one HTTP/2 connection each' : `${options.streamsPerConnection} streams per HTTP/2 connection`}, open their ADS streams at once (times from the first stream opened); ceiling beside Chancery`,
    [...keyHeaders, 'all served (s)', 'ceiling (s)', 'ceiling / Chancery', 'served p50 / p99 (s)', '+EDS all (s)', 'pushes', 'server CPU (s)', 'ceiling CPU (s)', 'CPU: ceiling / Chancery', 'loop stall max (ms)', 'fleet CPU (s)', 'retried (Chancery / ceiling)', 'accept queue full / SYNs resent (Chancery; ceiling)'],
    chancery.map((run) => {
      const ceiling = ceilingOf(run)?.storm;
      const { storm } = run;
      return [
        ...keyOf(run),
        s(storm.servedAll),
        ceiling ? s(ceiling.servedAll) : '–',
        vs(storm.completeAll, ceiling?.completeAll),
        `${s(storm.served.p50)} / ${s(storm.served.p99)}`,
        s(storm.completeAll),
        String(pushes(storm.traffic)),
        s(storm.serverCpuMs),
        ceiling ? s(ceiling.serverCpuMs) : '–',
        vs(storm.serverCpuMs, ceiling?.serverCpuMs),
        ms(storm.loopStallMaxMs),
        s(storm.fleetCpuMs),
        `${storm.retried} / ${ceiling ? String(ceiling.retried) : '–'}`,
        `${storm.listen.overflows} / ${storm.listen.synRetransmits}; ${ceiling ? `${ceiling.listen.overflows} / ${ceiling.listen.synRetransmits}` : '–'}`,
      ];
    }),
  );
  printTable(
    'Fairness: Chancery\'s HTTP API during the connect storm, one request at a time every 50 ms (from the bench\'s own process)',
    [...keyHeaders, 'path', 'requests', 'failed', 'p50 (ms)', 'p99 (ms)', 'max (ms)', 'p99 < 100 ms'],
    chancery.flatMap((run) =>
      run.storm.api.map((probed) => [
        ...keyOf(run),
        probed.path,
        String(probed.requests),
        String(probed.failed),
        ms(probed.ms.p50),
        ms(probed.ms.p99),
        ms(probed.ms.max),
        probed.ms.p99 < 100 && probed.failed === 0 ? 'met' : 'MISSED',
      ]),
    ),
  );
  if (options.stormChange) {
    printTable(
      'Fairness: a change written once a quarter of the storm\'s nodes were served, from the write until each of those nodes ACKed it; the worst quiet change beside it',
      [...keyHeaders, 'served before the change', 'first ACK (ms)', 'p50 (ms)', 'p99 (ms)', 'max (ms)', 'ceiling p99 (ms)', 'quiet change p99 (ms)', 'p99 ≤ 1 s'],
      chancery.map((run) => {
        const during = run.storm.change;
        const quiet = run.changes.length > 0 ? ms(worst(run.changes, (change) => change.ack.p99)) : '–';
        const ceiling = ceilingOf(run)?.storm.change;
        if (during === undefined) return [...keyOf(run), '–', '–', '–', '–', '–', '–', quiet, '–'];
        return [
          ...keyOf(run),
          String(during.served),
          ...ackCells(during.firstAckMs, during.ack, ceiling?.ack),
          quiet,
          during.ack.p99 <= SECOND ? 'met' : 'MISSED',
        ];
      }),
    );
  }
  printTable(
    'Memory (server, after forced GC): the N dataplanes applied → their configuration generated → N idle sessions; RSS per connected session beside the ceiling’s per connection',
    [...keyHeaders, 'applied (MB)', 'generated (MB)', 'sessions (MB)', 'heap/session (KB)', 'RSS/session (KB)', 'ceiling RSS/conn (KB)', 'idle CPU (%)', 'states', 'apply N (s)', 'generate N (s)'],
    chancery.map((run) => {
      const { applied, warmed, sessions } = run.memory;
      const ceiling = ceilingOf(run)?.storm;
      return [
        ...keyOf(run),
        (applied.heapUsed / 2 ** 20).toFixed(1),
        (warmed.heapUsed / 2 ** 20).toFixed(1),
        (sessions.heapUsed / 2 ** 20).toFixed(1),
        kb((sessions.heapUsed - warmed.heapUsed) / run.nodes),
        kb(run.storm.rssPerSession),
        ceiling ? kb(ceiling.rssPerSession) : '–',
        run.idleCpuPercent.toFixed(1),
        Object.entries(run.states).map(([state, count]) => `${state} ${count}`).join(', ') + (run.byWorker ? ` (${run.byWorker.join(' + ')})` : ''),
        s(run.applyMs),
        s(run.warmMs),
      ];
    }),
  );
  printTable(
    `Change: one more endpoint of the service every node calls; from the write to each node ACKing the new EDS version${options.meshes.includes('policies') ? '; with policies also a policy change (the MeshHTTPRoute of the service every node calls, its weights 90/10 ↔ 50/50), to each node ACKing the new RDS version' : ''}; ceiling beside Chancery`,
    [...keyHeaders, 'change', 'first ACK (ms)', 'ACK p50 (ms)', 'p99 (ms)', 'max (ms)', 'ceiling p99 (ms)', 'ceiling / Chancery', 'pushes', 'bytes/node', 'server CPU/node (µs)', 'ceiling CPU/node (µs)', 'CPU: ceiling / Chancery', 'loop lag p99 / stall max (ms)', 'fleet CPU (ms)'],
    chancery.flatMap((run) =>
      run.changes.map((change, at) => {
        const ceiling = ceilingOf(run)?.changes[at];
        return [
          ...keyOf(run),
          changeName(change.kind, change.change),
          ...ackCells(change.firstAckMs, change.ack, ceiling?.ack),
          vs(change.ack.p99, ceiling?.ack.p99),
          String(pushes(change.traffic)),
          (totalBytes(change.traffic) / run.nodes).toFixed(0),
          ((1_000 * change.serverCpuMs) / run.nodes).toFixed(0),
          ceiling ? ((1_000 * ceiling.serverCpuMs) / run.nodes).toFixed(0) : '–',
          vs(change.serverCpuMs, ceiling?.serverCpuMs),
          `${ms(change.loopLagP99Ms)} / ${ms(change.loopStallMaxMs)}`,
          ms(change.fleetCpuMs),
        ];
      }),
    ),
  );
  const sotwRuns = chancery.filter((run) => run.protocol === 'sotw');
  const sotwAndDelta = sotwRuns.flatMap((sotw) => {
    const { nodes, mesh } = sotw;
    const delta = chancery.find((run) => run.nodes === nodes && run.mesh === mesh && run.protocol === 'delta');
    if (!delta) return [];
    // Endpoint changes only: every variant makes them, and over both protocols they move the same nodes.
    const mean = (run: ChanceryRun, of: (change: ChangeRow) => number) => {
      const endpoint = run.changes.filter((change) => change.kind === 'endpoint');
      return endpoint.reduce((total, change) => total + of(change), 0) / endpoint.length;
    };
    const sotwBytes = mean(sotw, (change) => totalBytes(change.traffic));
    const deltaBytes = mean(delta, (change) => totalBytes(change.traffic));
    return [
      [
        String(nodes),
        ...(showMesh ? [mesh] : []),
        mb(sotwBytes),
        mb(deltaBytes),
        `${percent(deltaBytes / sotwBytes)} ${deltaBytes * 3 <= sotwBytes ? 'met' : 'MISSED'}`,
        ((1_000 * mean(sotw, (change) => change.serverCpuMs)) / nodes).toFixed(0),
        ((1_000 * mean(delta, (change) => change.serverCpuMs)) / nodes).toFixed(0),
      ],
    ];
  });
  if (sotwAndDelta.length > 0) {
    printTable(
      'A change over State of the World and over Delta (mean of the endpoint changes): bytes sent to the whole fleet, server CPU per node',
      ['N', ...(showMesh ? ['mesh'] : []), 'SotW (MB)', 'Delta (MB)', 'Delta / SotW (≤ 33 %)', 'SotW CPU/node (µs)', 'Delta CPU/node (µs)'],
      sotwAndDelta,
    );
  }
  const verdict = (value: number, target: number, text: string) => `${text} ${value <= target ? 'met' : 'MISSED'}`;
  printTable(
    'Targets (issue 12; the worst change of each run)',
    [...keyHeaders, 'all served ≤ 5 s', 'change p99 ≤ 1 s', 'CPU/node/change ≤ 60 µs', 'RSS/session ≤ 40 KB', 'storm and change ≥ 50 % of ceiling', 'loop lag p99 ≤ 50 ms'],
    chancery.map((run) => {
      const p99 = worst(run.changes, (change) => change.ack.p99);
      const cpu = (1_000 * worst(run.changes, (change) => change.serverCpuMs)) / run.nodes;
      const lag = worst(run.changes, (change) => change.loopLagP99Ms);
      const ceiling = ceilingOf(run);
      const ratio = ceiling ? Math.min(ceiling.storm.completeAll / run.storm.completeAll, worst(ceiling.changes, (change) => change.ack.p99) / p99) : undefined;
      return [
        ...keyOf(run),
        verdict(run.storm.completeAll, 5 * SECOND, `${s(run.storm.completeAll)} s`),
        verdict(p99, SECOND, `${ms(p99)} ms`),
        verdict(cpu, 60, `${cpu.toFixed(0)} µs`),
        verdict(run.storm.rssPerSession, 40 * 2 ** 10, `${kb(run.storm.rssPerSession)} KB`),
        ratio === undefined ? '–' : `${percent(ratio)} ${ratio >= 0.5 ? 'met' : 'MISSED'}`,
        verdict(lag, 50, `${ms(lag)} ms`),
      ];
    }),
  );
  if (options.cpuProf) {
    for (const run of runs) {
      const mesh = run.mesh === 'plain' ? '' : ` mesh=${run.mesh}`;
      printHot(`Hot functions, ${run.target}, connect storm, N=${run.nodes} ${run.protocol}${mesh}`, run.storm.hot, run.nodes);
      const slowest = [...run.changes].sort((a, b) => b.ack.p99 - a.ack.p99)[0];
      if (slowest) printHot(`Hot functions, ${run.target}, change ${changeName(slowest.kind, slowest.change)}, N=${run.nodes} ${run.protocol}${mesh}`, slowest.hot, run.nodes);
    }
  }
  if (showMesh) {
    printMeshComparison(chancery, options);
    printCertificates(chancery, options);
  }
}

/**
 * A run's key columns: N, protocol, and the mesh only when a variant other than plain was asked
 * for, so that a plain run's tables read as before.
 */
function runKeys(options: Options): { keyHeaders: string[]; keyOf: (run: Run) => string[]; showMesh: boolean } {
  const showMesh = options.meshes.some((mesh) => mesh !== 'plain');
  return {
    keyHeaders: ['N', 'protocol', ...(showMesh ? ['mesh'] : [])],
    keyOf: (run) => [String(run.nodes), run.protocol, ...(showMesh ? [run.mesh] : [])],
    showMesh,
  };
}

/** The issue's goals for each variant, as a most its figure may be over plain's: storm, endpoint change p99, memory per session. */
const MESH_GOALS: Readonly<Record<MeshVariant, { readonly storm?: number; readonly change?: number; readonly memory?: number }>> = {
  plain: {},
  policies: { storm: 1.2, change: 1.2, memory: 1.2 },
  strict: { storm: 1.5 },
};

/** Each variant beside plain (same N and protocol): its figure, and the ratio to plain's with the goal's verdict. */
function printMeshComparison(chancery: readonly ChanceryRun[], options: Options): void {
  const { keyHeaders, keyOf } = runKeys(options);
  const p99sOf = (run: ChanceryRun, kind: ChangeKind) => run.changes.filter((change) => change.kind === kind).map((change) => change.ack.p99);
  const worstOf = (run: ChanceryRun, kind: ChangeKind) => {
    const p99s = p99sOf(run, kind);
    return p99s.length === 0 ? undefined : Math.max(...p99s);
  };
  // The changes' median, as well as their worst: a major collection falls into one change in
  // five to ten, whichever its kind, and decides the worst of a few (bench/README.md).
  const medianOf = (run: ChanceryRun, kind: ChangeKind) => {
    const p99s = p99sOf(run, kind);
    return p99s.length === 0 ? undefined : spread(p99s).p50;
  };
  const heapPerSession = (run: ChanceryRun) => (run.memory.sessions.heapUsed - run.memory.warmed.heapUsed) / run.nodes;
  const ratio = (value: number, plain: number | undefined, goal: number | undefined) => {
    if (plain === undefined) return '–';
    const times = `${(value / plain).toFixed(2)}×`;
    return goal === undefined ? times : `${times} (≤ ${goal}: ${value <= plain * goal ? 'met' : 'MISSED'})`;
  };
  printTable(
    'Mesh variants beside plain (same N and protocol): the storm (all served), the worst endpoint change\'s p99, memory per session; the policy changes\' p99 beside the same run\'s endpoint changes\', the worst and the median of each kind (goal: as fast, on the median)',
    [...keyHeaders, 'all served (s)', '× plain', 'endpoint change p99 (ms)', '× plain', 'policy change p99, worst (ms)', '× endpoint', 'policy / endpoint change p99, median (ms)', '×', 'RSS/session (KB)', '× plain', 'heap/session (KB)', '× plain'],
    chancery.map((run) => {
      const plain = chancery.find((other) => other.mesh === 'plain' && other.nodes === run.nodes && other.protocol === run.protocol);
      const goals = MESH_GOALS[run.mesh];
      const endpoint = worstOf(run, 'endpoint')!;
      const policy = worstOf(run, 'policy');
      const policyMedian = medianOf(run, 'policy');
      const endpointMedian = medianOf(run, 'endpoint')!;
      const plainHeap = plain && heapPerSession(plain);
      return [
        ...keyOf(run),
        s(run.storm.completeAll),
        ratio(run.storm.completeAll, plain?.storm.completeAll, goals.storm),
        ms(endpoint),
        ratio(endpoint, plain && worstOf(plain, 'endpoint'), goals.change),
        policy === undefined ? '–' : ms(policy),
        policy === undefined ? '–' : ratio(policy, endpoint, undefined),
        policyMedian === undefined ? '–' : `${ms(policyMedian)} / ${ms(endpointMedian)}`,
        policyMedian === undefined ? '–' : ratio(policyMedian, endpointMedian, 1),
        kb(run.storm.rssPerSession),
        ratio(run.storm.rssPerSession, plain?.storm.rssPerSession, goals.memory),
        kb(heapPerSession(run)),
        ratio(heapPerSession(run), plainHeap, goals.memory),
      ];
    }),
  );
}

/** Strict runs: certificates signed during the storm, and the renewal round when the TTL brought one. */
function printCertificates(chancery: readonly ChanceryRun[], options: Options): void {
  const strict = chancery.filter((run) => run.mesh === 'strict');
  if (strict.length === 0) return;
  const { keyHeaders, keyOf } = runKeys(options);
  printTable(
    `Certificates (strict, certificateTTL ${options.certificateTtlS} s): signed during the storm, per second of the storm (to all served); the renewal round, when it came within ${MAX_RENEWAL_WAIT_S} s: every node renewed and ACKing its new Secret`,
    [...keyHeaders, 'signed in storm', 'signed / s', 'renewals', 'round, first to last ACK (s)', 'round server CPU (s, from its first ACK)', 'CPU/node (µs)', 'renewals / s'],
    strict.map((run) => {
      const { renewal } = run;
      const perSecond = (count: number, spanMs: number) => ((count * SECOND) / Math.max(1, spanMs)).toFixed(0);
      return [
        ...keyOf(run),
        String(run.certificatesInStorm),
        perSecond(run.certificatesInStorm, run.storm.completeAll),
        ...(renewal === undefined
          ? ['–', '–', '–', '–', '–']
          : [String(renewal.renewals), s(renewal.spanMs), s(renewal.serverCpuMs), ((1_000 * renewal.serverCpuMs) / run.nodes).toFixed(0), perSecond(renewal.renewals, renewal.spanMs)]),
      ];
    }),
  );
}
