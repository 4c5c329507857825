import { pino, type Logger } from 'pino';
import { interval, type Observable, type Subscription } from 'rxjs';
import { createApiServer, type ApiServer } from './api/index.js';
import { DEFAULTS, type ControlPlaneOptions } from './control-plane-options.js';
import { InvalidResourceInputError, UnsupportedStoreError } from './errors.js';
import { SessionRegistry } from './machines/session-registry.js';
import type { SessionView } from './machines/session-view.js';
import { generate, validate, type Resource, type ResourceKey } from './mesh/index.js';
import { createResourceStore, MemoryEventLog, type EventLog, type ResourceStore, type Stored, type WriteOptions } from './store/index.js';
import { XdsServer } from './xds/sotw-server.js';

/**
 * A running Chancery: the xDS server, its sessions, the store and (optionally) the HTTP API.
 */
export interface ControlPlane {
  readonly instanceId: string;
  /** The bound addresses, known once `start()` has resolved. */
  readonly addresses: { readonly xds: string; readonly api?: string };
  /** Opens the store, catches up, and starts serving xDS (and the API). */
  start(): Promise<void>;
  /**
   * Stops gracefully: every stream is ended with UNAVAILABLE (clients reconnect elsewhere),
   * sessions are evicted, servers closed, the store closed.
   */
  stop(): Promise<void>;
  /** Validates and stores a resource; rejects with `InvalidResourceInputError` listing every issue. */
  apply(resource: unknown, options?: WriteOptions): Promise<Stored<Resource>>;
  delete(key: ResourceKey, options?: WriteOptions): Promise<void>;
  get(key: ResourceKey): Stored<Resource> | undefined;
  list(type: Resource['type'], mesh?: string): readonly Stored<Resource>[];
  /** Each session's view whenever it changes state or records a NACK. */
  readonly sessions: Observable<SessionView>;
  /** The sessions of this instance now. */
  listSessions(): SessionView[];
  session(node: string): SessionView | undefined;
  /** What `node`'s current stream was last sent, per type, decoded. */
  lastSent(node: string): ReturnType<SessionRegistry['lastSent']>;
  readonly store: ResourceStore;
}

/**
 * Creates a control plane. Nothing is opened until `start()`.
 *
 * @example
 * ```ts
 * import { createControlPlane } from 'chancery';
 *
 * const cp = createControlPlane({ xdsAddress: '127.0.0.1:0', apiAddress: false, store: 'memory' });
 * await cp.start();
 * await cp.apply({ type: 'Dataplane', mesh: 'default', name: 'backend-1',
 *   networking: { address: '127.0.0.1', inbound: [{ port: 50051, tags: { service: 'backend' } }] } });
 * cp.sessions.subscribe((session) => console.log(session.node, session.state));
 * // point gRPC clients with node id "default.<name>" at cp.addresses.xds
 * await cp.stop();
 * ```
 */
export function createControlPlane(options: ControlPlaneOptions = {}): ControlPlane {
  const instanceId = options.instanceId ?? `chancery-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const logger: Logger = (options.logger ?? pino({ level: 'info' })).child({ instance: instanceId });
  const now = options.now ?? Date.now;
  const log = openLog(options.store ?? DEFAULTS.store);
  const store = createResourceStore(log, {
    instance: instanceId,
    onError: (error) => logger.warn({ err: error }, 'store catch-up failed; sessions keep their configuration'),
  });
  const registry = new SessionRegistry({
    instanceId,
    evictionGrace: options.evictionGrace ?? DEFAULTS.evictionGrace,
    generate: (node) => {
      const result = generate(node, store.projection);
      return result.ok ? result : { ok: false, error: { code: result.error.code, message: result.error.message } };
    },
    revision: () => store.projection.revision,
    now,
    ...(options.clock && { clock: options.clock }),
    logger,
  });
  const xds = new XdsServer({ gateway: registry, instanceId, logger, now });
  let api: ApiServer | undefined;
  const subscriptions: Subscription[] = [];
  const addresses: { xds: string; api?: string } = { xds: '' };

  return {
    instanceId,
    addresses,
    store,
    sessions: registry.views,
    async start() {
      await store.start();
      subscriptions.push(
        store.projections.subscribe((projection) => registry.advance(projection.revision)),
        (options.watchdog ?? interval(options.refreshInterval ?? DEFAULTS.refreshInterval)).subscribe(() => registry.tick()),
      );
      addresses.xds = await xds.listen(options.xdsAddress ?? DEFAULTS.xdsAddress);
      const apiAddress = options.apiAddress ?? DEFAULTS.apiAddress;
      if (apiAddress !== false) {
        api = createApiServer(
          {
            instanceId,
            store,
            sessions: { list: () => registry.list(), get: (node) => registry.get(node), lastSent: (node) => registry.lastSent(node) },
            ready: () => store.ready,
          },
          { logger },
        );
        const colon = apiAddress.lastIndexOf(':');
        addresses.api = await api.listen(apiAddress.slice(0, colon), Number(apiAddress.slice(colon + 1)));
      }
      logger.info({ xds: addresses.xds, api: addresses.api ?? 'off' }, 'chancery started');
    },
    async stop() {
      registry.shutdown('control plane shutting down; reconnect to another instance');
      for (const subscription of subscriptions.splice(0)) subscription.unsubscribe();
      await xds.close();
      await api?.close();
      await store.close();
      // A log given by the caller is the caller's to close.
      if (typeof options.store !== 'object') await log.close();
      logger.info('chancery stopped');
    },
    async apply(resource, writeOptions) {
      const result = validate(resource);
      if (!result.ok) throw new InvalidResourceInputError(result.issues);
      return store.put(result.resource, writeOptions);
    },
    delete: (key, writeOptions) => store.delete(key, writeOptions),
    get: (key) => store.get(key),
    list: (type, mesh) => store.list(type, mesh),
    listSessions: () => registry.list(),
    session: (node) => registry.get(node),
    lastSent: (node) => registry.lastSent(node),
  };
}

function openLog(store: string | EventLog): EventLog {
  if (typeof store !== 'string') return store;
  if (store === 'memory') return new MemoryEventLog();
  throw new UnsupportedStoreError(store);
}
