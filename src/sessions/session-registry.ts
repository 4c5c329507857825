import type { Logger } from 'pino';
import { createActor, type ActorOptions, type InspectionEvent } from 'xstate';
import {
  delayedEventOf,
  generationEvent,
  isBehind,
  REQUEST_EVENTS,
  SESSION_STATES,
  sessionMachine,
  sessionStateOf,
  stateIdOf,
  viewOf,
  type EndStatus,
  type CertificateInfo,
  type Generate,
  type SessionEvent,
  type SessionIntent,
  type SessionMachine,
  type SessionState,
  type SessionView,
  type StreamInfo,
  type TypedRequest,
} from '../machines/index.js';
import { compareText, sortedIndex } from '../common/index.js';
import { requestKind, type SessionGateway, type StreamSink } from '../xds/index.js';
import type { SessionCallbacks } from './session-callbacks.js';
import type { SessionScheduler } from './session-scheduler.js';
import { LiveSession, type Session, type SessionKeeper } from './live-session.js';
import { SessionStory } from './session-story.js';
import { SessionSystems } from './session-systems.js';

type Clock = NonNullable<ActorOptions<SessionMachine>['clock']>;

/** What the scheduler does with a batch of one closure. */
const run = (work: () => void) => work();

/** The issuer's code for a mesh whose CA is not there (yet): `MtlsUnavailableError` (src/identity). */
const MTLS_UNAVAILABLE = 'CHANCERY_IDENTITY_MTLS_UNAVAILABLE';

/** ms between the slices of a drain. */
const DRAIN_STEP = 100;

/** Sessions in this step retry on every watchdog tick (a catch-up the store could not serve). */
const RETRIES_ON_TICK = 'retries-on-tick';

export interface SessionRegistryOptions {
  readonly instanceId: string;
  /** ms a disconnected session waits for its node before eviction. */
  readonly evictionGrace: number;
  /** Generates the node's snapshot from the store's current projection: what a session asks for, and what a store change carries. */
  readonly generate: Generate;
  /** The store's current revision. */
  readonly revision: () => number;
  /**
   * Reads the store up to the log's end, for a session in `catching-up`: a node that arrives
   * holding configuration may come from an instance whose store was ahead of this one's, and
   * must not be sent less than it holds. Concurrent calls share their reads.
   */
  readonly catchUp: () => Promise<unknown>;
  /** Epoch ms; stamped on every event. */
  readonly now: () => number;
  /** The clock XState schedules eviction on, and drains their steps; a SimulatedClock in tests. */
  readonly clock: Clock;
  /** Spreads work over many sessions across turns of the event loop. */
  readonly scheduler: SessionScheduler;
  readonly logger: Logger;
  /** Transitions kept per session for inspection. Default 32. */
  readonly historySize?: number;
  /** Told as sessions change, are asked and answer; see `SessionCallbacks`. */
  readonly callbacks?: SessionCallbacks;
  /**
   * Issues nodes their workload certificates, in meshes with mTLS (`CertificateKeeper`); without
   * it a session that asks for one is told it failed.
   */
  readonly certificates?: CertificateIssuer;
}

/** What the registry needs of whoever issues certificates. */
export interface CertificateIssuer {
  issue(node: string): Promise<CertificateInfo>;
  /** The certificate issued ahead for the node, handed over at once; undefined when there is none to hand over. */
  handOver(node: string): CertificateInfo | undefined;
  /** The node's session was evicted: its certificate goes with it (I3). */
  forget(node: string): void;
}

/** A node's certificate timer (renewal or retry), whether an issue is under way, and the next retry's wait. */
interface CertificateEntry {
  timer?: unknown;
  issuing: boolean;
  retry: number;
}

/** ms before a failed issue is tried again, doubling up to the most. */
const CERTIFICATE_RETRY = { first: 1_000, most: 30_000 } as const;

/**
 * The sessions of this instance: one root actor per node (spawning thousands of children under
 * one parent is quadratic in XState), keyed by node id. It turns what the server, the store and
 * the watchdog report into session events, and carries out the sessions' intents: generating
 * snapshots, having the store catch up, and handing responses to stream writers. It decides
 * nothing: every decision is the chart's.
 */
export class SessionRegistry implements SessionGateway {
  readonly #options: SessionRegistryOptions;
  readonly #log: Logger;
  readonly #callbacks: SessionCallbacks;
  readonly #sessions = new Map<string, Session>();
  readonly #sinks = new Map<string, StreamSink>();
  /**
   * Every session's node, in order, and how many sessions rest in each state, kept as sessions
   * come, move and go: a page of 10,000 sessions in order is a slice, and their counts are read,
   * not counted, while a storm keeps the loop busy.
   */
  readonly #ordered: string[] = [];
  readonly #counts = Object.fromEntries(SESSION_STATES.map((state) => [state, 0])) as Record<SessionState, number>;
  /** Batches of sessions being told of a store change, a tick or a catch-up, not yet all told. */
  #telling = 0;
  /** Once shutting down or draining: why a stream whose first request still waited is refused. */
  #closing: string | undefined;
  readonly #systems: SessionSystems;
  /**
   * Per node with mTLS: the timer that tells its session a certificate is due (renewal at 2/3 of
   * its life, or a retry after a failure), and whether an issue is under way. Cleared with the
   * session (I3).
   */
  readonly #certificates = new Map<string, CertificateEntry>();

  /** What every session tells the registry: one object for all of them. */
  readonly #keeper: SessionKeeper = {
    moved: (session, to, cause) => {
      const { node, at } = session;
      const { phase } = session.actor.getSnapshot().context;
      const served = phase.state === 'serving' ? phase.snapshot : undefined;
      const record = session.story.moved(this.#options.now(), cause ?? { type: delayedEventOf(at) ?? 'xstate.after' }, at, to, served);
      session.at = to;
      this.#counts[sessionStateOf(at)]--;
      this.#counts[sessionStateOf(to)]++;
      this.#callbacks.onTransition?.(node, record, () => this.#view(session));
      if (this.#log.isLevelEnabled('debug')) this.#log.debug({ node, from: record.from, to, event: record.event, ...record.detail }, 'session transition');
    },
    ended: (session) => this.#remove(session),
    failed: (session, error, cause) => {
      const { node, at } = session;
      this.#log.error({ err: error, node, state: at, event: cause?.type ?? 'xstate.after' }, 'session failed; evicting it');
      // Every stream the session held or was being handed ends, so none hangs unanswered: the
      // one it served, and a new one whose opening failed (from `disconnected` it held none).
      const status: EndStatus = { code: 'INTERNAL', message: `internal error in the session of ${node}: ${error instanceof Error ? error.message : String(error)}` };
      const { phase } = session.actor.getSnapshot().context;
      if ('stream' in phase) this.#end(phase.stream.id, status);
      if (cause?.type === 'stream.opened') this.#end(cause.stream.id, status);
      this.#remove(session);
    },
  };

  constructor(options: SessionRegistryOptions) {
    this.#options = options;
    this.#log = options.logger;
    this.#callbacks = options.callbacks ?? {};
    this.#systems = new SessionSystems(options.clock);
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Streams handed to the sessions and not yet closed or ended: 0 once every stream is gone (I3). */
  get streams(): number {
    return this.#sinks.size;
  }

  /** Every session now, for reading (views, counts); not to be changed. */
  sessions(): IterableIterator<Session> {
    return this.#sessions.values();
  }

  session(node: string): Session | undefined {
    return this.#sessions.get(node);
  }

  /** The sessions from `start` to `end` (exclusive) in node order. */
  inOrder(start: number, end: number): Session[] {
    return this.#ordered.slice(start, end).map((node) => this.#sessions.get(node)!);
  }

  /** Sessions per state, every state included. */
  counts(): Record<SessionState, number> {
    return { ...this.#counts };
  }

  /**
   * The first request of a new stream, carrying `node`. A newer stream supersedes an older one
   * (I4). What the server reports is carried out in the order it arrived, through the scheduler,
   * so that in a storm it waits for a later turn of the loop once this one's slice is spent.
   */
  open(stream: StreamInfo, sink: StreamSink, node: string, request: TypedRequest): void {
    this.#inOrder(() => {
      // It arrived before the drain or shutdown began, and waited its turn: it goes where the others went.
      if (this.#closing !== undefined) return sink.end({ code: 'UNAVAILABLE', message: this.#closing });
      this.#sinks.set(stream.id, sink);
      const session = this.#sessions.get(node) ?? this.#create(node);
      session.send({ type: 'stream.opened', at: this.#options.now(), stream, request, generate: this.#options.generate });
    });
  }

  request(node: string, streamId: string, request: TypedRequest): void {
    this.#inOrder(() => {
      const session = this.#sessions.get(node);
      if (!session) return;
      const kind = requestKind(request);
      // A superseded stream's requests change nothing (the chart ignores them): not told either.
      const { phase } = session.actor.getSnapshot().context;
      if ('stream' in phase && phase.stream.id === streamId) this.#callbacks.onRequest?.(node, kind, request.typeUrl);
      if (this.#log.isLevelEnabled('debug')) {
        const { typeUrl, responseNonce: nonce } = request;
        const names = request.protocol === 'sotw' ? { version: request.versionInfo, resources: request.resourceNames.length } : { subscribe: request.subscribe.length, unsubscribe: request.unsubscribe.length };
        this.#log.debug({ node, stream: streamId, kind, typeUrl, nonce, ...names }, 'request');
      }
      session.send({ type: REQUEST_EVENTS[kind], at: this.#options.now(), streamId, request });
    });
  }

  /** The stream ended. Only the session's current stream can disconnect it (I4). */
  close(node: string, streamId: string, reason: string): void {
    this.#inOrder(() => {
      this.#sinks.delete(streamId);
      this.#sessions.get(node)?.send({ type: 'stream.closed', at: this.#options.now(), streamId, reason });
    });
  }

  /**
   * The store's projection moved: every session decides whether it needs a new snapshot.
   * Optimization: sessions hear of it in slices, so the pushes and ACKs of the first slices
   * flow while later ones generate, rather than after one loop over 10,000 sessions
   * (bench/sessions.bench.ts).
   */
  advance(revision: number): void {
    this.#tell([...this.#sessions.values()], { type: 'store.advanced', at: this.#options.now(), revision, generate: this.#options.generate });
  }

  /** The watchdog's safety net: sessions behind the store regenerate, and catch-ups the store failed are tried again. */
  tick(): void {
    // A store change or tick still reaching sessions in slices will reach the rest: a tick
    // now would only do the same work again. Requests waiting their turn do not hold it back.
    if (this.#telling > 0) return;
    const revision = this.#options.revision();
    const due: Session[] = [];
    let retrying = 0;
    for (const session of this.#sessions.values()) {
      const snapshot = session.actor.getSnapshot();
      const retries = snapshot.hasTag(RETRIES_ON_TICK);
      if (retries) retrying++;
      // Optimization: the chart's `behind` guard, asked here first so that an idle fleet
      // costs no events at all (bench/sessions.bench.ts: ~10 µs a session a tick otherwise).
      if (retries || isBehind(snapshot.context, revision)) due.push(session);
    }
    // One line a tick, not one a node: the store's own failure is logged where it happens.
    if (retrying > 0) this.#log.warn({ nodes: retrying }, 'nodes arriving with configuration still wait for the store to be read; trying again');
    this.#tell(due, { type: 'watchdog.ticked', at: this.#options.now(), revision, generate: this.#options.generate });
  }

  /** Ends every stream with UNAVAILABLE and evicts every session, at once. */
  shutdown(reason: string): void {
    this.#closing = reason;
    this.#shutDown([...this.#sessions.values()], reason);
  }

  /**
   * Ends every stream with UNAVAILABLE and evicts every session, spread evenly over `period`
   * ms, so that the fleet's reconnects reach the other instances as a flow, not a storm.
   * Resolves once the last session was told.
   */
  drain(period: number, reason: string): Promise<void> {
    this.#closing = reason;
    const sessions = [...this.#sessions.values()];
    const steps = Math.max(1, Math.min(sessions.length, Math.ceil(period / DRAIN_STEP)));
    const perStep = Math.ceil(sessions.length / steps);
    const { clock } = this.#options;
    return new Promise((resolve) => {
      let next = 0;
      const step = () => {
        this.#shutDown(sessions.slice(next, next + perStep), reason);
        next += perStep;
        if (next >= sessions.length) resolve();
        else clock.setTimeout(step, period / steps);
      };
      step();
    });
  }

  /** Carries out `work` after what the server reported before it, in the scheduler's requests lane. */
  #inOrder(work: () => void): void {
    this.#options.scheduler.schedule([work], run, 'requests');
  }

  /** Tells `sessions` of `event` in slices; a session evicted or replaced meanwhile is skipped. */
  #tell(sessions: readonly Session[], event: SessionEvent): void {
    if (sessions.length === 0) return;
    this.#telling++;
    let told = 0;
    this.#options.scheduler.schedule(
      sessions,
      (session) => {
        if (this.#sessions.get(session.node) === session) session.send(event);
        if (++told === sessions.length) this.#telling--;
      },
      'fan-out',
    );
  }

  #create(node: string): Session {
    const { evictionGrace, clock, historySize = 32 } = this.#options;
    // Optimization: XState builds inspection events for every step of an actor given `inspect`
    // (3× the cost of an event, bench/README.md): only a session chosen for live inspection has one.
    // XState inspects only a root actor, with a system of its own: every other session shares one (session-systems.ts).
    const inspector = this.#callbacks.inspect?.(node);
    // A certificate issued ahead (pregeneration) is the session's from the start, so its first
    // generation has it: without, a node of a mesh with mTLS would be generated once for nothing.
    const certificate = this.#options.certificates?.handOver(node);
    const actor = createActor(sessionMachine, {
      input: { node, evictionGrace, ...(certificate && { certificate }) },
      clock,
      ...(inspector ? { inspect: (inspection: InspectionEvent) => inspector.next?.(inspection) } : { parent: this.#systems.next() }),
    });
    const session = new LiveSession(node, actor, new SessionStory(historySize), this.#keeper);
    actor.on('*', (intent) => this.#carryOut(session, intent));
    actor.subscribe(session);
    this.#sessions.set(node, session);
    this.#ordered.splice(this.#place(node), 0, node);
    this.#counts[sessionStateOf(session.at)]++;
    actor.start();
    // Renewed like any certificate issued to it, at 2/3 of its life.
    if (certificate !== undefined) this.#dueIn(session, this.#certificateEntry(node), certificate.renewAt - this.#options.now());
    return session;
  }

  #carryOut(session: Session, intent: SessionIntent): void {
    const { node } = session;
    switch (intent.type) {
      case 'generate':
        return this.#generate(session);
      case 'catchUp':
        return this.#catchUp(session, intent.streamId);
      case 'send': {
        const { response, streamId } = intent;
        if (this.#log.isLevelEnabled('debug')) {
          const { typeUrl, version, nonce, resources } = response;
          this.#log.debug({ node, stream: streamId, typeUrl, version, nonce, resources: resources.length }, 'push');
        }
        const sink = this.#sinks.get(streamId);
        if (sink === undefined) return;
        // Sent first: `?.` would skip evaluating the arguments when no one listens.
        const bytes = sink.send(response);
        this.#callbacks.onResponse?.(node, response, bytes);
        return;
      }
      case 'end':
        this.#log.info({ node, stream: intent.streamId, code: intent.status.code, reason: intent.status.message }, 'ending stream');
        this.#end(intent.streamId, intent.status);
        return;
      case 'issueCertificate':
        return this.#issueCertificate(session);
      case 'nacked': {
        const { typeUrl, version, nonce, message } = intent;
        this.#log.warn({ node, typeUrl, version, nonce, error: message }, 'NACK');
        // The snapshot is already the one the NACK moved to; `at` follows once the step is done.
        const state = stateIdOf(session.actor.getSnapshot().value);
        const record = session.story.nacked(this.#options.now(), state, { typeUrl, version, nonce, message });
        this.#callbacks.onNack?.(node, record, () => this.#view(session));
        return;
      }
    }
  }

  #generate(session: Session): void {
    const generation = this.#options.generate(session.node);
    session.send(generationEvent(generation, this.#options.now()));
  }

  /** Has the store read the log to its end, then tells the session, in slices: a storm of arrivals shares one read. */
  #catchUp(session: Session, streamId: string): void {
    this.#options.catchUp().then(
      () => this.#tell([session], { type: 'store.caughtUp', at: this.#options.now(), streamId, generate: this.#options.generate }),
      (error: unknown) => this.#tell([session], { type: 'store.catchUpFailed', at: this.#options.now(), streamId, reason: error instanceof Error ? error.message : String(error) }),
    );
  }

  /**
   * Issues the node a certificate, then tells its session, and sets the timer that tells it when
   * the next is due: the renewal at 2/3 of its life, or a retry after a failure (I8: the node keeps
   * what it holds meanwhile). One issue at a time per node; the clock is the injected one.
   */
  #issueCertificate(session: Session): void {
    const { node } = session;
    const issuer = this.#options.certificates;
    const entry = this.#certificateEntry(node);
    if (entry.issuing) return;
    entry.issuing = true;
    const done = (event: SessionEvent, dueIn: number) => {
      entry.issuing = false;
      // Evicted meanwhile: nothing is kept for it.
      if (this.#sessions.get(node) !== session) return;
      this.#dueIn(session, entry, dueIn);
      this.#tell([session], event);
    };
    (issuer === undefined ? Promise.reject(new Error('this instance issues no certificates')) : issuer.issue(node)).then(
      (certificate) => {
        entry.retry = CERTIFICATE_RETRY.first;
        const at = this.#options.now();
        done({ type: 'certificate.issued', at, certificate, generate: this.#options.generate }, certificate.renewAt - at);
      },
      (error: unknown) => {
        const wait = entry.retry;
        entry.retry = Math.min(wait * 2, CERTIFICATE_RETRY.most);
        const reason = error instanceof Error ? error.message : String(error);
        // The mesh's CA still being created (every node of a mesh just switched to mTLS meets it) is expected, and brief.
        if ((error as { code?: unknown }).code === MTLS_UNAVAILABLE) this.#log.debug({ node, reason, retryIn: wait }, 'no certificate to issue yet; the node keeps what it holds');
        else this.#log.warn({ node, err: error, retryIn: wait }, 'issuing a certificate failed; the node keeps what it holds');
        done({ type: 'certificate.failed', at: this.#options.now(), reason }, wait);
      },
    );
  }

  #certificateEntry(node: string): CertificateEntry {
    let entry = this.#certificates.get(node);
    if (entry === undefined) {
      entry = { issuing: false, retry: CERTIFICATE_RETRY.first };
      this.#certificates.set(node, entry);
    }
    return entry;
  }

  /** Tells the session, `ms` from now, that a certificate is due: its renewal, or a retry. */
  #dueIn(session: Session, entry: CertificateEntry, ms: number): void {
    const { clock } = this.#options;
    if (entry.timer !== undefined) clock.clearTimeout(entry.timer as never);
    entry.timer = clock.setTimeout(() => {
      entry.timer = undefined;
      if (this.#sessions.get(session.node) === session) this.#tell([session], { type: 'certificate.due', at: this.#options.now() });
    }, Math.max(0, ms));
  }

  #forgetCertificate(node: string): void {
    const entry = this.#certificates.get(node);
    if (entry === undefined) return;
    if (entry.timer !== undefined) this.#options.clock.clearTimeout(entry.timer as never);
    this.#certificates.delete(node);
    this.#options.certificates?.forget(node);
  }

  #shutDown(sessions: readonly Session[], reason: string): void {
    const event: SessionEvent = { type: 'shutdown.requested', at: this.#options.now(), reason };
    for (const session of sessions) session.send(event);
  }

  #end(streamId: string, status: EndStatus): void {
    const sink = this.#sinks.get(streamId);
    this.#sinks.delete(streamId);
    sink?.end(status);
  }

  #view(session: Session): SessionView {
    return viewOf(session.actor.getSnapshot(), this.#options.instanceId, session.story.toArray());
  }

  #remove(session: Session): void {
    // I3: an evicted session leaves nothing behind. Only this session's own entry is removed.
    if (this.#sessions.get(session.node) !== session) return;
    this.#sessions.delete(session.node);
    this.#forgetCertificate(session.node);
    this.#ordered.splice(this.#place(session.node), 1);
    this.#counts[sessionStateOf(session.at)]--;
  }

  /** Where `node` is, or goes, in `#ordered`. */
  #place(node: string): number {
    return sortedIndex(this.#ordered, node, compareText);
  }
}
