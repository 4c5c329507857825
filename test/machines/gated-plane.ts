import { pino } from 'pino';
import { SimulatedClock } from 'xstate';
import { createApiServer, registrySessions, type ApiServer } from '../../src/api/index.js';
import { DEFAULTS } from '../../src/control-plane-options.js';
import { SessionRegistry, type GenerationResult } from '../../src/machines/session-registry.js';
import { generate, validate } from '../../src/mesh/index.js';
import { createMemoryStore, type ResourceStore } from '../../src/store/index.js';
import { XdsServer } from '../../src/xds/sotw-server.js';

export const HELD = 'CHANCERY_TEST_GENERATION_HELD';

/**
 * The real registry, xDS server, store and HTTP API, assembled by hand so a test decides
 * when generation succeeds: while the gate is shut, every generation fails with `HELD`. That
 * turns the chart's `snapshot.generated` and `snapshot.failed` into steps a test can take.
 */
export interface GatedPlane {
  readonly store: ResourceStore;
  readonly registry: SessionRegistry;
  readonly clock: SimulatedClock;
  readonly xds: string;
  readonly api: string;
  gate: 'open' | 'shut';
  apply(resource: unknown): Promise<void>;
  stop(): Promise<void>;
}

export async function startGatedPlane(evictionGrace: number): Promise<GatedPlane> {
  const logger = pino({ level: process.env.CHANCERY_TEST_LOG_LEVEL ?? 'silent' });
  const clock = new SimulatedClock();
  const store = createMemoryStore({ instance: 'model' });
  await store.start();
  const plane = {
    gate: 'shut' as 'open' | 'shut',
  };
  const registry = new SessionRegistry({
    instanceId: 'model',
    evictionGrace,
    generate: (node): GenerationResult => {
      if (plane.gate === 'shut') return { ok: false, error: { code: HELD, message: 'generation held by the test' } };
      const result = generate(node, store.projection);
      return result.ok ? result : { ok: false, error: { code: result.error.code, message: result.error.message } };
    },
    revision: () => store.projection.revision,
    now: () => clock.now(),
    clock,
    logger,
  });
  const subscription = store.projections.subscribe((projection) => registry.advance(projection.revision));
  const server = new XdsServer({ gateway: registry, instanceId: 'model', logger, now: () => clock.now(), limits: DEFAULTS.xdsLimits });
  const xds = await server.listen('127.0.0.1:0');
  const api: ApiServer = createApiServer(
    {
      instanceId: 'model',
      store,
      sessions: registrySessions(registry),
      fleet: { others: async () => [], instances: async () => [] },
      ready: () => store.ready,
    },
    { logger },
  );
  const apiAddress = await api.listen('127.0.0.1', 0);
  return Object.assign(plane, {
    store,
    registry,
    clock,
    xds,
    api: apiAddress,
    async apply(resource: unknown) {
      const result = validate(resource);
      if (!result.ok) throw new Error(JSON.stringify(result.issues));
      await store.put(result.resource);
    },
    async stop() {
      registry.shutdown('test over');
      subscription.unsubscribe();
      await server.close(1_000);
      await api.close();
      await store.close();
    },
  });
}
