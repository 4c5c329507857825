import { pino } from 'pino';
import { Subject } from 'rxjs';
import { SimulatedClock } from 'xstate';
import { createControlPlane, type ControlPlane } from '../../src/index.js';
import type { ControlPlaneOptions } from '../../src/control-plane-options.js';

export interface Harness {
  readonly cp: ControlPlane;
  /** Session timers (eviction grace) run on this; advance it with `clock.increment(ms)`. */
  readonly clock: SimulatedClock;
  /** Emit to make the watchdog tick. */
  readonly watchdog: Subject<void>;
  readonly xds: string;
  readonly api: string;
  stop(): Promise<void>;
}

/**
 * A real control plane on loopback ports chosen by the OS, with a simulated clock for
 * session timers and a hand-driven watchdog, so tests never wait on real time.
 */
export async function startHarness(options: Partial<ControlPlaneOptions> & { readonly clock?: SimulatedClock } = {}): Promise<Harness> {
  const clock = options.clock ?? new SimulatedClock();
  const watchdog = new Subject<void>();
  const cp = createControlPlane({
    xdsAddress: '127.0.0.1:0',
    apiAddress: '127.0.0.1:0',
    store: 'memory',
    instanceId: 'test',
    evictionGrace: 10_000,
    logger: pino({ level: process.env.CHANCERY_TEST_LOG_LEVEL ?? 'silent' }),
    watchdog,
    clock,
    ...options,
  });
  await cp.start();
  return {
    cp,
    clock,
    watchdog,
    xds: cp.addresses.xds,
    api: cp.addresses.api ?? '',
    stop: () => cp.stop(),
  };
}

/** A Dataplane serving `service` on `port` at 127.0.0.1. */
export function backendDataplane(name: string, port: number, service = 'backend', mesh = 'default') {
  return { type: 'Dataplane', mesh, name, networking: { address: '127.0.0.1', inbound: [{ port, tags: { service } }] } };
}

/** A Dataplane with no inbound and no outbound: a proxyless gRPC client. */
export function clientDataplane(name: string, mesh = 'default') {
  return { type: 'Dataplane', mesh, name, networking: { address: '127.0.0.1' } };
}
