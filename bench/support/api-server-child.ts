/**
 * A bench child process running Chancery with its HTTP API, for `ui.bench.ts`: instance
 * `bench-a` (xDS and API on loopback ports the OS chooses) serves the fleet, and instance
 * `bench-b` (API only, no dataplanes) shares its memory store, so that `bench-b`'s
 * `GET /sessions?scope=fleet` reads `bench-a`'s sessions as saved records. Both run in this
 * process, pino at `warn`; the parent drives it over IPC and reads the event-loop lag of
 * each phase from here, where the API's work runs.
 */
import { pino } from 'pino';
import { createControlPlane, type ControlPlane } from '../../src/index.js';
import { MemoryEventLog } from '../../src/store/index.js';
import { monotonicMs, serveCommands } from './child-link.js';
import { PhaseProfiler, type PhaseProfile } from './cpu-profile.js';
import { dataplane, hubEndpoint, type MeshShape } from './mesh-shape.js';
import { LoopLag, type LoopLagSample } from './ui-loop-lag.js';

export type ApiServerApi = {
  /**
   * Starts both instances; `evictionGrace` short, so a churn phase ends soon after its nodes
   * leave; `streamsPerConnection` the fleet's, past the default limit.
   */
  start: { args: { evictionGrace: number; streamsPerConnection: number }; result: { xds: string; api: string; readerApi: string } };
  /** Applies the mesh's dataplanes to `bench-a`, `concurrency` writes in flight. */
  apply: { args: { shape: MeshShape; concurrency: number }; result: { ms: number } };
  /** One more hub endpoint: a write every node's EDS depends on. */
  change: { args: { change: number }; result: { ms: number } };
  lagStart: { args: null; result: null };
  lagStop: { args: null; result: LoopLagSample };
  /** Starts the V8 sampling profiler (for `--cpu-prof`), and the allocation sampler too with `allocations` (`--alloc-prof`). */
  profileStart: { args: { allocations?: boolean } | null; result: null };
  /** Stops it, writes the profile to `file`, and returns the hottest functions since `profileStart`. */
  profileStop: { args: { top: number; file: string }; result: PhaseProfile };
  stop: { args: null; result: null };
};

const lag = new LoopLag();
const profiler = new PhaseProfiler();
const planes: ControlPlane[] = [];
/** The store both instances share; theirs to use, this process's to close. */
const log = new MemoryEventLog();

function serving(): ControlPlane {
  const plane = planes[0];
  if (!plane) throw new Error('the control planes have not been started');
  return plane;
}

serveCommands<ApiServerApi>({
  async start({ evictionGrace, streamsPerConnection }) {
    const logger = pino({ level: 'warn' }, pino.destination(2));
    const xdsLimits = { maxStreamsPerConnection: streamsPerConnection };
    for (const instanceId of ['bench-a', 'bench-b']) {
      const plane = createControlPlane({ xdsAddress: '127.0.0.1:0', apiAddress: '127.0.0.1:0', store: log, instanceId, evictionGrace, xdsLimits, logger });
      await plane.start();
      planes.push(plane);
    }
    const [a, b] = planes as [ControlPlane, ControlPlane];
    if (a.addresses.api === undefined || b.addresses.api === undefined) throw new Error('an instance started without its HTTP API');
    return { xds: a.addresses.xds, api: a.addresses.api, readerApi: b.addresses.api };
  },

  async apply({ shape, concurrency }) {
    const plane = serving();
    const started = monotonicMs();
    for (let from = 0; from < shape.nodes; from += concurrency) {
      const writes: Promise<unknown>[] = [];
      for (let index = from; index < Math.min(shape.nodes, from + concurrency); index++) writes.push(plane.apply(dataplane(index, shape)));
      await Promise.all(writes);
    }
    return { ms: monotonicMs() - started };
  },

  async change({ change }) {
    const started = monotonicMs();
    await serving().apply(hubEndpoint(change));
    return { ms: monotonicMs() - started };
  },

  lagStart() {
    lag.start();
    return null;
  },

  lagStop: () => lag.stop(),

  async profileStart(options) {
    await profiler.start(options ?? {});
    return null;
  },

  profileStop: ({ top, file }) => profiler.stop(top, file),

  async stop() {
    for (const plane of planes.splice(0).reverse()) await plane.stop();
    await log.close();
    setTimeout(() => process.exit(0), 10);
    return null;
  },
});
