import { pino } from 'pino';
import { Subject } from 'rxjs';
import { SimulatedClock } from 'xstate';
import type { ControlPlaneOptions } from '../../src/control-plane-options.js';
import { createControlPlane, type ControlPlane } from '../../src/index.js';
import type { EventLog } from '../../src/store/types.js';

/** One instance of a fleet run in one process; the test stops it. */
export interface FleetInstance {
  readonly cp: ControlPlane;
  /** Session timers (eviction grace) run on this. */
  readonly clock: SimulatedClock;
  /** Emit to have the instance save its session records. */
  readonly save: Subject<void>;
  /** Emit to make the watchdog tick. */
  readonly watchdog: Subject<void>;
}

/**
 * Starts an instance on `log`, which other instances share as they would share Postgres (a
 * MemoryEventLog's change feed and session records are shared by every control plane on it):
 * xDS on a loopback port the OS chooses, no API, a watchdog that never ticks, and record saves
 * and session timers driven by the test.
 */
export async function startFleetInstance(log: EventLog, id: string, options: Partial<ControlPlaneOptions> = {}): Promise<FleetInstance> {
  const clock = new SimulatedClock();
  const save = new Subject<void>();
  const watchdog = new Subject<void>();
  const cp = createControlPlane({
    xdsAddress: '127.0.0.1:0',
    apiAddress: false,
    store: log,
    instanceId: id,
    logger: pino({ level: 'silent' }),
    watchdog,
    recordTicks: save,
    clock,
    ...options,
  });
  await cp.start();
  return { cp, clock, save, watchdog };
}
