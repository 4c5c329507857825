/**
 * A bench child process running Chancery: memory store (or the store `start` names), the HTTP
 * API only when `start` asks for it, pino at `warn`, xDS on a loopback port the OS chooses. The parent (a `*.bench.ts`)
 * drives it over IPC: it applies the mesh, makes changes, and reads memory after a forced GC,
 * CPU time, event-loop delay and session counts. Start it with `--expose-gc` (ChildLink.fork does).
 */
import { pino } from 'pino';
import { filter, firstValueFrom, timeout } from 'rxjs';
import { createControlPlane, type ControlPlane } from '../src/index.js';
import { generate } from '../src/mesh/index.js';
import { serveCommands, monotonicMs } from './support/child-link.js';
import { processProbes, type ProbeApi } from './support/process-probes.js';
import { backendDataplanes, dataplane, hubEndpoint, nodeId, type MeshShape } from './support/mesh-shape.js';

export type ServerApi = ProbeApi & {
  /**
   * `store` defaults to `memory`, `instanceId` to `bench`. `streamsPerConnection` is how many
   * streams the fleet multiplexes on one connection, more than a real Envoy (one) and than the
   * default limit allows: the server is told to take them.
   */
  start: {
    args: { refreshInterval: number; store?: string; instanceId?: string; streamsPerConnection: number; api?: boolean };
    /** `api`: the HTTP API's address, when `api` asked for one. */
    result: { xds: string; api?: string; pid: number; ms: number };
  };
  /** Applies the mesh's dataplanes (backends first), `concurrency` writes in flight (the store batches their catch-ups). */
  apply: { args: { shape: MeshShape; concurrency: number }; result: { ms: number; revision: number } };
  /** Generates every node's snapshot once, so the memoised per-node resources exist before any session does. */
  warm: { args: { shape: MeshShape }; result: { ms: number } };
  sessions: { args: null; result: { counts: Record<string, number>; ms: number } };
  /**
   * Adds one hub endpoint. `fannedOutAt` is when the store's projection emission reached a
   * subscriber made after the control plane's own, i.e. once every session had handled
   * `store.advanced`; `appliedAt` is when `cp.apply` resolved.
   */
  change: {
    args: { change: number };
    result: { startedAt: number; fannedOutAt: number; appliedAt: number; revision: number };
  };
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

serveCommands<ServerApi>({
  ...processProbes(),
  async start({ refreshInterval, store = 'memory', instanceId = 'bench', streamsPerConnection, api = false }) {
    const started = monotonicMs();
    cp = createControlPlane({
      xdsAddress: '127.0.0.1:0',
      apiAddress: api ? '127.0.0.1:0' : false,
      store,
      instanceId,
      refreshInterval,
      xdsLimits: { maxStreamsPerConnection: streamsPerConnection },
      logger: pino({ level: 'warn' }, pino.destination(2)),
    });
    await cp.start();
    // Subscribed after the control plane's own subscriber, so this runs once every session has the revision.
    cp.store.projections.subscribe((projection) => fannedOut.push({ revision: projection.revision, at: monotonicMs() }));
    return { xds: cp.addresses.xds, ...(cp.addresses.api !== undefined && { api: `http://${cp.addresses.api}` }), pid: process.pid, ms: monotonicMs() - started };
  },

  async apply({ shape, concurrency }) {
    const control = running();
    const started = monotonicMs();
    const resources = [...backendDataplanes(shape), ...Array.from({ length: shape.nodes }, (_, index) => dataplane(index, shape))];
    for (let from = 0; from < resources.length; from += concurrency) {
      await Promise.all(resources.slice(from, from + concurrency).map((resource) => control.apply(resource)));
    }
    fannedOut.length = 0;
    return { ms: monotonicMs() - started, revision: control.store.projection.revision };
  },

  warm({ shape }) {
    const control = running();
    const started = monotonicMs();
    for (let index = 0; index < shape.nodes; index++) {
      const result = generate(nodeId(index), control.store.projection);
      if (!result.ok) throw new Error(`generating ${nodeId(index)}: ${result.error.message}`);
    }
    return { ms: monotonicMs() - started };
  },

  sessions() {
    const started = monotonicMs();
    const counts: Record<string, number> = {};
    for (const session of running().listSessions()) counts[session.state] = (counts[session.state] ?? 0) + 1;
    return { counts, ms: monotonicMs() - started };
  },

  async change({ change }) {
    const control = running();
    const startedAt = monotonicMs();
    const stored = await control.apply(hubEndpoint(change));
    const appliedAt = monotonicMs();
    const revision = stored.seq;
    // The store may fold several writes into one emission: the first at or past this write counts.
    const fannedOutAt = fannedOut.find((emission) => emission.revision >= revision)?.at ?? Number.NaN;
    fannedOut.length = 0;
    return { startedAt, fannedOutAt, appliedAt, revision };
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
});
