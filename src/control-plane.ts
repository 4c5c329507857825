import { pino, type Logger } from 'pino';
import { interval, type Observable, type Subscription } from 'rxjs';
import { accessFor, ControlPlaneMetrics, createApiServer, sessionsOf, type ApiServer } from './api/index.js';
import { ChangeDesk, Rollouts, type FleetSessions, type Run } from './changes/index.js';
import type { ControlPlaneOptions } from './control-plane-options.js';
import { DEFAULTS } from './defaults.js';
import { InvalidResourceInputError } from './errors.js';
import {
  authenticateApiCaller,
  credentialsChanged,
  MeshAuthorityKeeper,
  RefusalLog,
  followTlsFiles,
  StreamAuthenticator,
  type FollowedTlsFiles,
  type RefusalSummary,
} from './identity/index.js';
import { fleetSessions, Pregeneration, recordedSessions, SavedSessions, SessionRecorder, storeGeneration, type FleetSession } from './fleet/index.js';
import { connectInspector, type SessionInspector } from './inspector/index.js';
import type { SessionView } from './machines/index.js';
import { validate, type DataplaneTls, type Resource, type ResourceKey, type Valid } from './mesh/index.js';
import {
  checkRetention,
  createResourceStore,
  describeRetention,
  describeStoreSpec,
  openEventLog,
  parseStoreSpec,
  type EventLog,
  type InstanceRecord,
  type ResourceStore,
  type Retention,
  type Stored,
  type WriteOptions,
} from './store/index.js';
import {
  CertificateKeeper,
  clientStatuses,
  combineCallbacks,
  GenerationNews,
  nodeGeneration,
  SessionRegistry,
  SessionScheduler,
  SessionViews,
  SessionWatch,
  TlsStatusWriter,
  type LastSent,
  type SessionCallbacks,
} from './sessions/index.js';
import { grpcServerCredentials, XdsServer, type XdsServerSizes } from './xds/index.js';

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
   * sessions are evicted, servers closed, the store closed. A client that holds its connection
   * open (a request that never ends) is cut after 5 s, on either server: it never holds the stop.
   */
  stop(): Promise<void>;
  /**
   * Stops for a rolling restart (what `chancery run` does on SIGTERM): new streams are refused
   * and connections told GOAWAY, open streams are ended with UNAVAILABLE spread over
   * `drainPeriod` so their clients reconnect to other instances gradually, then it stops.
   */
  drain(): Promise<void>;
  /** The sessions of every live instance sharing the store (this one's live, others' as saved). */
  fleetSessions(node?: string): Promise<FleetSession[]>;
  /** The instances sharing the store that saved within `instanceTtl`. */
  instances(): Promise<readonly InstanceRecord[]>;
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
  lastSent(node: string): LastSent | undefined;
  /** The xDS streams this instance refused for their credentials: how many, and the last few. */
  refusals(): RefusalSummary;
  /**
   * Resolves once every Dataplane stored so far has its configuration generated ahead and, in a
   * mesh with mTLS, its certificate issued (`pregenerate`); at once when pregeneration is off.
   */
  pregenerated(): Promise<void>;
  readonly store: ResourceStore;
  /** Prometheus metrics (`GET /metrics`); `metrics.registry` can be merged into an embedder's own. */
  readonly metrics: ControlPlaneMetrics;
  /**
   * For tests and diagnostics: how many entries the per-node and per-stream tables hold now.
   * Once every session is evicted, or the control plane stopped, each is 0 (I3); the change
   * feed's are `store.sizes()`.
   */
  sizes(): ControlPlaneSizes;
}

/** What `ControlPlane.sizes()` counts. */
export interface ControlPlaneSizes extends XdsServerSizes {
  /** Session actors: one per node, from its first request until it is evicted. */
  readonly sessions: number;
  /** Streams the sessions may write to: one per stream handed to them, until it closes or is ended. */
  readonly sinks: number;
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
  return new ChanceryControlPlane(options);
}

/**
 * ms a starting instance spends at most generating its store's dataplanes before it serves
 * (15,000–25,000 of them on the bench's machine); the rest follow in the scheduler's idle lane.
 */
const GENERATION_BEFORE_SERVING_MS = 2_000;

/** ms the other instances' saved sessions are reused for between reads (change warnings read them). */
const SAVED_SESSIONS_REUSE_MS = 1_000;

/** What exists only while the control plane runs. */
interface Running {
  readonly log: EventLog;
  readonly store: ResourceStore;
  readonly api?: ApiServer;
  readonly subscriptions: readonly Subscription[];
  readonly recorder?: SessionRecorder;
  /** The TLS files being followed, to stop following on stop. */
  readonly tls: FollowedTlsFiles;
}

class ChanceryControlPlane implements ControlPlane {
  readonly instanceId: string;
  readonly addresses: { xds: string; api?: string } = { xds: '' };
  readonly #options: ControlPlaneOptions;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #storeSpec: string | EventLog;
  readonly #retention: Retention | undefined;
  readonly #registry: SessionRegistry;
  readonly #views: SessionViews;
  readonly #watch: SessionWatch;
  readonly #xds: XdsServer;
  readonly metrics: ControlPlaneMetrics;
  readonly #refusals = new RefusalLog();
  /** One time-sliced scheduler for the sessions' fan-out, ticks and catch-ups, and the session records. */
  readonly #scheduler = new SessionScheduler();
  #certificates!: CertificateKeeper;
  /** Which store changes the sessions hear of, from the start on. */
  #news: GenerationNews | undefined;
  #pregeneration: Pregeneration | undefined;
  readonly #admission: StreamAuthenticator;
  readonly #saved: SavedSessions;
  readonly #tlsStatus: TlsStatusWriter;
  #xdsTls: FollowedTlsFiles['xds'];
  #inspector: SessionInspector | undefined;
  #running: Running | undefined;

  constructor(options: ControlPlaneOptions) {
    this.#options = options;
    this.instanceId = options.instanceId ?? `chancery-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    this.#logger = (options.logger ?? pino({ level: 'info' })).child({ instance: this.instanceId });
    this.#storeSpec = options.store ?? DEFAULTS.store;
    // A store that cannot be opened, or a retention that keeps nothing, is refused here, before anything is bound.
    if (typeof this.#storeSpec === 'string') parseStoreSpec(this.#storeSpec);
    const retention = options.retention ?? DEFAULTS.retention;
    this.#retention = retention === 'off' ? undefined : checkRetention(retention);
    const now = options.now ?? Date.now;
    this.#now = now;
    const maxConnectionAge = options.maxConnectionAge ?? DEFAULTS.maxConnectionAge;
    const recordInterval = options.recordInterval ?? DEFAULTS.recordInterval;
    if (options.recordTicks === undefined && this.#instanceTtl < 3 * recordInterval) {
      throw new RangeError(`instanceTtl (${this.#instanceTtl} ms) must be at least 3 × recordInterval (${recordInterval} ms), or live instances would look dead between saves`);
    }
    const metrics = new ControlPlaneMetrics({
      sessions: () => this.#views,
      now,
      soonestCertificateExpiry: () => this.#certificates.soonestExpiry(),
      connections: () => this.#xds.connects(),
    });
    this.metrics = metrics;
    // A session's changes mark its record to be saved with the next batch: its story too when a step was added.
    const recording: SessionCallbacks = {
      onTransition: (node) => this.#running?.recorder?.touched(node, true),
      onNack: (node) => this.#running?.recorder?.touched(node, true),
      onRequest: (node, kind) => {
        if (kind === 'ack') this.#running?.recorder?.touched(node, false);
      },
    };
    const inspecting: SessionCallbacks = { inspect: (node) => this.#inspector?.observerFor(node) };
    // Mesh mTLS (docs/mtls.md): certificates issued here, and what each node ACKed of them written for the generator.
    const certificates = new CertificateKeeper({ projection: () => this.store.projection, now, onIssued: (renewal) => metrics.certificateIssued(renewal) });
    this.#certificates = certificates;
    const tlsStatus = (this.#tlsStatus = new TlsStatusWriter({
      session: (node) => this.#registry.session(node),
      stored: (mesh, name) => (this.store.get({ type: 'DataplaneTls', mesh, name }) as Stored<DataplaneTls> | undefined)?.resource,
      write: (statuses: readonly Valid<DataplaneTls>[]) => this.store.write(statuses.map((resource) => ({ kind: 'upserted', resource })), { caller: 'chancery' }),
      logger: this.#logger,
      sessions: () => this.#registry.size,
    }));
    const acks: SessionCallbacks = {
      onRequest: (node, kind) => {
        if (kind === 'ack') tlsStatus.acked(node);
      },
    };
    this.#watch = new SessionWatch();
    this.#registry = new SessionRegistry({
      instanceId: this.instanceId,
      evictionGrace: this.#evictionGrace,
      generate: nodeGeneration({ projection: () => this.store.projection, certificate: (node) => certificates.current(node), onGenerated: (seconds) => metrics.generated(seconds) }),
      revision: () => this.#news?.revision ?? this.store.projection.revision,
      now,
      clock: options.clock ?? SYSTEM_CLOCK,
      logger: this.#logger,
      catchUp: () => this.store.refresh(),
      scheduler: this.#scheduler,
      callbacks: combineCallbacks(metrics, recording, this.#watch, inspecting, acks),
      certificates,
    });
    this.#views = new SessionViews(this.#registry, this.instanceId);
    this.#saved = new SavedSessions(() => this.#recordedSource(), { now, reuseMs: SAVED_SESSIONS_REUSE_MS });
    // Who may speak as a dataplane: on the xDS port, and when its agent asks for a certificate.
    this.#admission = new StreamAuthenticator({ store: { get: (key) => this.store.get(key) }, now, audienceHosts: () => this.#xdsTls?.names ?? [] });
    this.#xds = new XdsServer({
      gateway: options.sessionGateway?.(this.#registry) ?? this.#registry,
      instanceId: this.instanceId,
      logger: this.#logger,
      now,
      clientStatus: { clients: () => clientStatuses(this.#registry) },
      limits: { ...DEFAULTS.xdsLimits, ...options.xdsLimits },
      ...(maxConnectionAge !== 'off' && { maxConnectionAge }),
      admission: this.#admission,
      onRefused: (refused) => {
        this.#refusals.record(refused);
        metrics.refused(refused);
      },
      clock: options.clock ?? SYSTEM_CLOCK,
    });
  }

  get store(): ResourceStore {
    return this.#runningOrThrow().store;
  }

  get sessions(): Observable<SessionView> {
    return this.#watch.views;
  }

  async start(): Promise<void> {
    const options = this.#options;
    const registry = this.#registry;
    const spec = this.#storeSpec;
    // Read first: TLS files that cannot be served fail the start before anything is opened.
    const tls = followTlsFiles(
      { ...(options.xdsTls && { xds: options.xdsTls }), ...(options.apiTls && { api: options.apiTls }) },
      { logger: this.#logger, reloadInterval: options.tlsReloadInterval ?? DEFAULTS.tlsReloadInterval },
    );
    const { xds: xdsTls, api: apiTls } = tls;
    this.#xdsTls = xdsTls;
    const log = typeof spec === 'string' ? await openEventLog(spec, { instance: this.instanceId }) : spec;
    const store = createResourceStore(log, {
      instance: this.instanceId,
      onError: (error) => this.#logger.warn({ err: error }, 'store catch-up failed; sessions keep their configuration'),
      retention: this.#retention,
      onCompacted: ({ previous, horizon }) =>
        this.#logger.info({ previous, horizon, retention: describeRetention(this.#retention) }, 'event log compacted'),
    });
    this.#running = { log, store, subscriptions: [], tls };
    await store.start();
    let admitted = store.projection;
    const news = (this.#news = new GenerationNews(store.projection));
    const authorities = new MeshAuthorityKeeper({
      store,
      now: this.#now,
      onError: (error, mesh) => this.#logger.warn({ err: error, mesh }, 'creating the mesh’s first CA failed; tried again at the next change'),
    });
    const pregeneration = (options.pregenerate ?? DEFAULTS.pregenerate)
      ? new Pregeneration({
          generate: storeGeneration(() => this.#running?.store.projection, this.#certificates, this.#logger),
          scheduler: this.#scheduler,
          generated: () => this.metrics.pregenerated(),
        })
      : undefined;
    this.#pregeneration = pregeneration;
    // Before the xDS port opens: after a restart the whole fleet reconnects at once.
    pregeneration?.first(store.projection, GENERATION_BEFORE_SERVING_MS);
    const subscriptions = [
      // Before the sessions hear of a change: a stream it no longer admits ends before anything more is sent on it.
      store.projections.subscribe((projection) => {
        if (credentialsChanged(admitted, projection)) this.#xds.recheck();
        admitted = projection;
      }),
      store.projections.subscribe((projection) => {
        if (news.heard(projection)) registry.advance(projection.revision);
      }),
      // Enabling mTLS creates the mesh's CA (docs/mtls.md).
      store.projections.subscribe((projection) => authorities.follow(projection)),
      ...(pregeneration ? [store.projections.subscribe((projection) => pregeneration.follow(projection))] : []),
      this.metrics.followChangeFeed(store.projections, store.projection.revision),
      (options.watchdog ?? interval(options.refreshInterval ?? DEFAULTS.refreshInterval)).subscribe(() => registry.tick()),
    ];
    this.#running = { log, store, subscriptions, tls };
    if (options.inspect) {
      // Loaded only when asked for: the inspector brings a WebSocket client and serializers.
      this.#inspector = await connectInspector(options.inspect, this.instanceId);
    }
    this.addresses.xds = await this.#xds.listen(options.xdsAddress ?? DEFAULTS.xdsAddress, xdsTls && grpcServerCredentials(xdsTls));
    const apiAddress = options.apiAddress ?? DEFAULTS.apiAddress;
    if (apiAddress !== false) {
      const colon = apiAddress.lastIndexOf(':');
      const api = createApiServer(
        {
          instanceId: this.instanceId,
          store,
          changes: new ChangeDesk({ store, sessions: this.#fleetSessions(), run: this.#inBackground }),
          rollouts: new Rollouts({ store, sessions: this.#fleetSessions(), run: this.#inBackground, onComplete: (seconds) => this.metrics.rolledOut(seconds) }),
          sessions: sessionsOf(this.#views, this.#watch),
          fleet: { others: (node) => recordedSessions(this.#recordedSource(), node), instances: () => this.instances() },
          ready: () => store.ready,
          xdsAddress: () => this.addresses.xds,
          evictionGrace: this.#evictionGrace,
          metrics: options.metricsSource?.(this.metrics) ?? this.metrics,
          now: this.#now,
          refusals: () => this.refusals(),
          dataplanes: { admit: (node, authorization) => this.#admission.admit(node, authorization), certificateIssued: () => this.metrics.certificateIssued(false) },
        },
        {
          logger: this.#logger,
          ...(apiTls && { tls: apiTls }),
          access: accessFor(apiAddress.slice(0, colon), options.apiAuth, {
            authenticate: (authorization) => authenticateApiCaller(store, authorization, this.#now()),
            onDenied: (status) => this.metrics.apiDenied(status),
          }),
        },
      );
      this.#running = { ...this.#running, api };
      this.addresses.api = await api.listen(apiAddress.slice(0, colon), Number(apiAddress.slice(colon + 1)));
    }
    await this.#startRecording();
    this.#logger.info(
      {
        xds: this.addresses.xds,
        xdsTls: xdsTls !== undefined,
        api: this.addresses.api ?? 'off',
        apiTls: apiTls !== undefined,
        store: typeof spec === 'string' ? describeStoreSpec(spec) : 'custom event log',
        keeps: describeRetention(this.#retention),
      },
      'chancery started',
    );
  }

  refusals(): RefusalSummary {
    return this.#refusals.summary();
  }

  pregenerated(): Promise<void> {
    return this.#pregeneration?.idle() ?? Promise.resolve();
  }

  /** Joins the fleet: saves this instance's sessions now and every `recordInterval`. */
  async #startRecording(): Promise<void> {
    const running = this.#running!;
    const startedAt = new Date(this.#now()).toISOString();
    const { recorder, saving } = await SessionRecorder.join(
      {
        records: running.log.sessionRecords,
        instance: () => ({ id: this.instanceId, xds: this.addresses.xds, ...(this.addresses.api && { api: this.addresses.api }), startedAt }),
        sessions: { get: (node) => this.#views.get(node), nodes: () => [...this.#registry.sessions()].map((session) => session.node) },
        ttl: this.#instanceTtl,
        now: this.#now,
        logger: this.#logger,
        scheduler: this.#scheduler,
      },
      this.#options.recordTicks ?? interval(this.#options.recordInterval ?? DEFAULTS.recordInterval),
    );
    this.#running = { ...running, subscriptions: [...running.subscriptions, saving], recorder };
  }

  get #instanceTtl(): number {
    return this.#options.instanceTtl ?? DEFAULTS.instanceTtl;
  }

  get #evictionGrace(): number {
    return this.#options.evictionGrace ?? DEFAULTS.evictionGrace;
  }

  async drain(): Promise<void> {
    const period = this.#options.drainPeriod ?? DEFAULTS.drainPeriod;
    this.#logger.info({ period, sessions: this.#registry.size }, 'draining: refusing new streams, ending open ones gradually');
    this.#xds.drain();
    await this.#registry.drain(period, `instance ${this.instanceId} is draining; reconnect to another instance`);
    await this.stop();
  }

  fleetSessions(node?: string): Promise<FleetSession[]> {
    const own = node === undefined ? this.#views.list() : [this.#views.get(node)].filter((view) => view !== undefined);
    return fleetSessions(this.#recordedSource(), own, node);
  }

  /** The fleet's sessions as previews, warnings and rollouts read them (issue 31). */
  #fleetSessions(): FleetSessions {
    return { local: (node) => this.#views.brief(node), saved: () => this.#saved.read(), certificate: (node) => this.#certificates.current(node) };
  }

  /** Work of the API's over many nodes (a preview's generation), in slices behind the sessions' own. */
  readonly #inBackground: Run = (items, work) => {
    this.#scheduler.schedule(items, work, 'background');
    return this.#scheduler.settled('background');
  };

  #recordedSource() {
    return { records: this.#runningOrThrow().log.sessionRecords, ttl: this.#instanceTtl, instance: this.instanceId };
  }

  instances(): Promise<readonly InstanceRecord[]> {
    return this.#runningOrThrow().log.sessionRecords.instances(this.#instanceTtl);
  }

  #runningOrThrow(): Running {
    if (!this.#running) throw new Error(`control plane ${this.instanceId} is not started`);
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#tlsStatus.stop();
    this.#registry.shutdown('control plane shutting down; reconnect to another instance');
    await this.#xds.close();
    // After the shutdown, so the inspector shows the sessions' last steps.
    this.#inspector?.stop();
    this.#inspector = undefined;
    const running = this.#running;
    this.#running = undefined;
    if (running) {
      for (const subscription of running.subscriptions) subscription.unsubscribe();
      running.tls.stop();
      // Its nodes are going elsewhere; other instances need not wait for its records to expire.
      await running.recorder
        ?.leave()
        .catch((error: unknown) => this.#logger.warn({ err: error }, 'removing this instance’s session records failed; they expire'));
      await running.api?.close();
      await running.store.close();
      // A log given by the caller is the caller's to close.
      if (typeof this.#storeSpec === 'string') await running.log.close();
    }
    this.#logger.info('chancery stopped');
  }

  async apply(resource: unknown, options?: WriteOptions): Promise<Stored<Resource>> {
    const result = validate(resource);
    if (!result.ok) throw new InvalidResourceInputError(result.issues);
    return this.store.put(result.resource, options);
  }

  delete(key: ResourceKey, options?: WriteOptions): Promise<void> {
    return this.store.delete(key, options);
  }

  get(key: ResourceKey): Stored<Resource> | undefined {
    return this.store.get(key);
  }

  list(type: Resource['type'], mesh?: string): readonly Stored<Resource>[] {
    return this.store.list(type, mesh);
  }

  listSessions(): SessionView[] {
    return this.#views.list();
  }

  session(node: string): SessionView | undefined {
    return this.#views.get(node);
  }

  lastSent(node: string): LastSent | undefined {
    return this.#views.lastSent(node);
  }

  sizes(): ControlPlaneSizes {
    return { sessions: this.#registry.size, sinks: this.#registry.streams, ...this.#xds.sizes() };
  }
}

/** Session timers on the process's own timers, when no clock is given. */
const SYSTEM_CLOCK: NonNullable<ControlPlaneOptions['clock']> = {
  setTimeout: (fn, timeout) => setTimeout(fn, timeout),
  clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout),
};
