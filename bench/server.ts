/**
 * A bench child process running Chancery: memory store (or the store `start` names), the HTTP
 * API only when `start` asks for it, pino at `warn`, xDS on a loopback port the OS chooses. The parent (a `*.bench.ts`)
 * drives it over IPC: it applies the mesh, makes changes, and reads memory after a forced GC,
 * CPU time, event-loop delay and session counts. Start it with `--expose-gc` (ChildLink.fork does).
 */
import cluster from 'node:cluster';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { filter, firstValueFrom, timeout } from 'rxjs';
import { createControlPlane, type ControlPlane } from '../src/index.js';
import { CertificateNeededError, generate, signingAuthority } from '../src/mesh/index.js';
import { serveCommands, monotonicMs } from './support/child-link.js';
import { processProbes, type ProbeApi } from './support/process-probes.js';
import { listening, ServerWorkers } from './support/server-workers.js';
import { backendDataplanes, dataplane, hubEndpoint, hubRoute, MESH, meshResource, nodeId, policies, type ChangeKind, type MeshShape, type MeshVariant } from './support/mesh-shape.js';

export type ServerApi = ProbeApi & {
  /**
   * `store` defaults to `memory`, `instanceId` to `bench`. `streamsPerConnection` is how many
   * streams the fleet multiplexes on one connection, more than a real Envoy (one) and than the
   * default limit allows: the server is told to take them. `workers` above 1 (with a Postgres
   * `store`) runs that many worker processes, as `chancery run --workers` does; every command
   * after goes to them, and their answers are added up.
   */
  start: {
    args: { refreshInterval: number; store?: string; instanceId?: string; streamsPerConnection: number; api?: boolean; workers?: number; pregenerate?: boolean };
    /** `api`: the HTTP API's address, when `api` asked for one. */
    result: { xds: string; api?: string; pid: number; ms: number };
  };
  /**
   * Applies the mesh: its Mesh resource and its CA first when the variant has one (with
   * `certificateTTL`, default 24h), then the dataplanes (backends first), `concurrency` writes in
   * flight (the store batches their catch-ups), then the variant's policies.
   */
  apply: { args: { shape: MeshShape; concurrency: number; certificateTTL?: string }; result: { ms: number; revision: number } };
  /**
   * Generates every node's snapshot once, so the memoised per-node resources exist before any
   * session does; with mTLS, only what the mesh shares (a node's own waits for its certificate).
   */
  warm: { args: { shape: MeshShape }; result: { ms: number } };
  /** Sessions by state; with workers, also how many each worker has (the kernel decides who accepts a connection). */
  sessions: { args: null; result: { counts: Record<string, number>; byWorker?: number[]; ms: number } };
  /**
   * `kind` `endpoint` (the default) adds one hub endpoint, tagged as `variant`'s are; `policy`
   * rewrites the hub's MeshHTTPRoute weights. `fannedOutAt` is when the store's projection emission reached a
   * subscriber made after the control plane's own, i.e. once every session had handled
   * `store.advanced`; `appliedAt` is when `cp.apply` resolved.
   */
  change: {
    args: { change: number; kind?: ChangeKind; variant?: MeshVariant };
    result: { startedAt: number; fannedOutAt: number; appliedAt: number; revision: number };
  };
  /** Workload certificates issued so far (`chancery_certificates_issued_total`), and how many of them renewed one. */
  certificates: { args: null; result: { issued: number; renewals: number } };
  /**
   * Waits until this instance's sessions have handled store revision `revision` (a write made
   * here or, through the change feed, on another instance), and says when, in monotonic ms.
   */
  reached: { args: { revision: number; timeoutMs: number }; result: { at: number } };
  stop: { args: null; result: { ms: number } };
};

let cp: ControlPlane | undefined;
/** Monotonic ms at which each store revision the store emitted had been handed to every session. */
const fannedOut: { readonly revision: number; readonly at: number }[] = [];

function running(): ControlPlane {
  if (!cp) throw new Error('the control plane has not been started');
  return cp;
}

type Handlers = { [K in keyof ServerApi]: (args: ServerApi[K]['args']) => Promise<ServerApi[K]['result']> | ServerApi[K]['result'] };

/** What one control plane answers: this process's when it runs alone, a worker's with `workers`. */
const instance: Handlers = {
  ...processProbes(),
  async start({ refreshInterval, store = 'memory', instanceId = 'bench', streamsPerConnection, api = false, pregenerate = true }) {
    const started = monotonicMs();
    cp = createControlPlane({
      xdsAddress: '127.0.0.1:0',
      apiAddress: api ? '127.0.0.1:0' : false,
      store,
      instanceId,
      refreshInterval,
      xdsLimits: { maxStreamsPerConnection: streamsPerConnection },
      pregenerate,
      logger: pino({ level: 'warn' }, pino.destination(2)),
    });
    await cp.start();
    // Subscribed after the control plane's own subscriber, so this runs once every session has the revision.
    cp.store.projections.subscribe((projection) => fannedOut.push({ revision: projection.revision, at: monotonicMs() }));
    return { xds: cp.addresses.xds, ...(cp.addresses.api !== undefined && { api: `http://${cp.addresses.api}` }), pid: process.pid, ms: monotonicMs() - started };
  },

  async apply({ shape, concurrency, certificateTTL = '24h' }) {
    const control = running();
    const started = monotonicMs();
    const mesh = meshResource(shape, certificateTTL);
    if (mesh !== undefined) {
      await control.apply(mesh);
      await meshAuthority(control, 30_000);
    }
    const resources = [...backendDataplanes(shape), ...Array.from({ length: shape.nodes }, (_, index) => dataplane(index, shape)), ...policies(shape)];
    for (let from = 0; from < resources.length; from += concurrency) {
      await Promise.all(resources.slice(from, from + concurrency).map((resource) => control.apply(resource)));
    }
    fannedOut.length = 0;
    return { ms: monotonicMs() - started, revision: control.store.projection.revision };
  },

  async warm({ shape }) {
    const control = running();
    const started = monotonicMs();
    for (let index = 0; index < shape.nodes; index++) {
      const result = generate(nodeId(index), control.store.projection);
      // With mTLS a node's configuration waits for its certificate: only what the mesh shares is made here.
      if (!result.ok && !(result.error instanceof CertificateNeededError)) throw new Error(`generating ${nodeId(index)}: ${result.error.message}`);
    }
    // What the instance does ahead of its nodes itself: in a mesh with mTLS, their certificates issued.
    await control.pregenerated();
    return { ms: monotonicMs() - started };
  },

  sessions() {
    const started = monotonicMs();
    const counts: Record<string, number> = {};
    for (const session of running().listSessions()) counts[session.state] = (counts[session.state] ?? 0) + 1;
    return { counts, ms: monotonicMs() - started };
  },

  async change({ change, kind = 'endpoint', variant }) {
    const control = running();
    const startedAt = monotonicMs();
    const stored = await control.apply(kind === 'policy' ? hubRoute(change) : hubEndpoint(change, variant));
    const appliedAt = monotonicMs();
    const revision = stored.seq;
    // The store may fold several writes into one emission: the first at or past this write counts.
    const fannedOutAt = fannedOut.find((emission) => emission.revision >= revision)?.at ?? Number.NaN;
    fannedOut.length = 0;
    return { startedAt, fannedOutAt, appliedAt, revision };
  },

  async certificates() {
    const { registry } = running().metrics;
    const total = async (name: string) => (await registry.getSingleMetric(name)?.get())?.values[0]?.value ?? 0;
    return { issued: await total('chancery_certificates_issued_total'), renewals: await total('chancery_certificate_renewals_total') };
  },

  async reached({ revision, timeoutMs }) {
    const emitted = fannedOut.find((emission) => emission.revision >= revision);
    if (emitted) return { at: emitted.at };
    const { projections } = running().store;
    // A subscriber made now runs after the control plane's own for each later emission.
    await firstValueFrom(projections.pipe(filter((projection) => projection.revision >= revision), timeout(timeoutMs))).catch((error: unknown) => {
      throw new Error(`revision ${revision} did not reach this instance within ${timeoutMs} ms (at ${running().store.projection.revision})`, { cause: error });
    });
    return { at: monotonicMs() };
  },

  async stop() {
    const started = monotonicMs();
    await cp?.stop();
    setTimeout(() => process.exit(0), 10);
    return { ms: monotonicMs() - started };
  },
};

/**
 * Waits until the mesh's CA exists: Chancery creates it once mTLS is on, and until then a session
 * is refused a certificate and retries after 1 s, which a storm would measure.
 */
async function meshAuthority(control: ControlPlane, timeoutMs: number): Promise<void> {
  const deadline = monotonicMs() + timeoutMs;
  while (signingAuthority(control.store.projection.meshes.get(MESH)!) === undefined) {
    if (monotonicMs() > deadline) throw new Error(`mesh ${MESH} has no CA ${timeoutMs} ms after mTLS was turned on`);
    await sleep(20);
  }
}

/** A command sent on to the workers waits as long as the bench waits for it: the bench's own deadline applies. */
const INNER_TIMEOUT = 15 * 60_000;

/**
 * The commands of the process the bench forked: one control plane's, until a `start` with more
 * than one worker forks them; from then on each command goes to the workers. A write goes to
 * the first, and is done once every worker's sessions have handled it.
 */
function withWorkers(alone: Handlers): Handlers {
  let group: ServerWorkers | undefined;
  const routed = <K extends keyof ServerApi>(name: K, together: (workers: ServerWorkers, args: ServerApi[K]['args']) => Promise<ServerApi[K]['result']>) =>
    ((args: ServerApi[K]['args']) => (group === undefined ? alone[name](args as never) : together(group, args))) as Handlers[K];
  return {
    ...alone,
    start: async (args) => {
      if ((args.workers ?? 1) === 1) return alone.start(args);
      const { group: started, started: result } = await ServerWorkers.start(args.workers!, args, INNER_TIMEOUT);
      group = started;
      return result;
    },
    apply: routed('apply', async (workers, args) => {
      const started = monotonicMs();
      const { revision } = await workers.first('apply', args, INNER_TIMEOUT);
      await workers.reached(revision, INNER_TIMEOUT);
      return { ms: monotonicMs() - started, revision };
    }),
    warm: routed('warm', async (workers, args) => {
      const started = monotonicMs();
      await workers.each('warm', () => args, INNER_TIMEOUT);
      return { ms: monotonicMs() - started };
    }),
    memory: routed('memory', (workers) => workers.memory(INNER_TIMEOUT)),
    usage: routed('usage', async (workers) => workers.usage(await alone.usage(null), INNER_TIMEOUT)),
    sessions: routed('sessions', async (workers) => {
      const started = monotonicMs();
      const counts: Record<string, number> = {};
      const answers = await workers.each('sessions', () => null, INNER_TIMEOUT);
      for (const answer of answers) {
        for (const [state, count] of Object.entries(answer.counts)) counts[state] = (counts[state] ?? 0) + count;
      }
      const byWorker = answers.map((answer) => Object.values(answer.counts).reduce((a, b) => a + b, 0));
      return { counts, byWorker, ms: monotonicMs() - started };
    }),
    change: routed('change', async (workers, args) => {
      // The first worker wrote it and knows when its own sessions had it; the others are asked.
      const written = await workers.first('change', args, INNER_TIMEOUT);
      const others = await workers.reached(written.revision, INNER_TIMEOUT, { afterFirst: true });
      return { ...written, fannedOutAt: Math.max(written.fannedOutAt, others) };
    }),
    certificates: routed('certificates', async (workers) => {
      const answers = await workers.each('certificates', () => null, INNER_TIMEOUT);
      return { issued: answers.reduce((total, one) => total + one.issued, 0), renewals: answers.reduce((total, one) => total + one.renewals, 0) };
    }),
    reached: routed('reached', async (workers, { revision, timeoutMs }) => ({ at: await workers.reached(revision, timeoutMs) })),
    profileStart: routed('profileStart', () => Promise.reject(new Error('--cpu-prof profiles one process; not with --workers'))),
    stop: routed('stop', async (workers) => {
      const started = monotonicMs();
      await workers.stop(INNER_TIMEOUT);
      setTimeout(() => process.exit(0), 10);
      return { ms: monotonicMs() - started };
    }),
  };
}

if (cluster.isWorker) {
  serveCommands<ServerApi>(instance);
  listening();
} else serveCommands<ServerApi>(withWorkers(instance));
