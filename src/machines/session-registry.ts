import type { Logger } from 'pino';
import { Subject, type Observable } from 'rxjs';
import { createActor, type Actor, type ActorOptions, type AnyEventObject, type InspectionEvent, type Observer } from 'xstate';
import { decodeAny } from '../xds/decode.js';
import type { Snapshot } from '../xds/snapshot.js';
import type { StreamSink } from '../xds/stream-writer.js';
import { SHORT_NAME, type TypeUrl } from '../xds/type-urls.js';
import type { SessionEvent, SessionIntent, StreamInfo, TypedRequest } from './session-events.js';
import { sessionMachine, type SessionMachine } from './session-machine.js';
import type { SessionState, SessionView, TransitionRecord, TypeStatus } from './session-view.js';
import { viewOf } from './session-view-of.js';
import { TransitionRing } from './transition-ring.js';

type Clock = NonNullable<ActorOptions<SessionMachine>['clock']>;

/**
 * ms of session work per turn of the event loop when many sessions are told of something (a
 * store change, a tick, a release after a catch-up): bounded by time rather than by count, so
 * no turn stalls the loop, and pushes and ACKs flow between turns (bench/README.md, ui).
 */
const SLICE_MS = 8;
/** Sessions handled between two looks at the clock. */
const SLICE_CHECK = 16;

/** ms between the slices of a drain. */
const DRAIN_STEP = 100;

export type GenerationResult =
  | { readonly ok: true; readonly snapshot: Snapshot }
  | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } };

export interface SessionRegistryOptions {
  readonly instanceId: string;
  /** ms a disconnected session waits for its node before eviction. */
  readonly evictionGrace: number;
  /** Generates the node's snapshot from the store's current projection. */
  readonly generate: (node: string) => GenerationResult;
  /** The store's current revision. */
  readonly revision: () => number;
  /** Epoch ms; stamped on every event. */
  readonly now: () => number;
  /** The clock XState schedules eviction on, and drains their steps; a SimulatedClock in tests. */
  readonly clock: Clock;
  readonly logger: Logger;
  /** Transitions kept per session for inspection. Default 32. */
  readonly historySize?: number;
  /** Told of every state change and follow-up request (metrics); must be cheap. */
  readonly observer?: SessionObserver;
  /**
   * Reads the store up to the log's end. Called before a node that arrives holding
   * configuration is first answered: it may come from an instance whose store was ahead of
   * this one's, and must not be sent less than it holds. Concurrent calls share their reads.
   */
  readonly catchUp?: () => Promise<unknown>;
  /**
   * Told which node's session changed (session records): `story` when its transitions did (a
   * state change or a NACK), otherwise an ACK changed its status alone. Must be cheap.
   */
  readonly changed?: (node: string, story: boolean) => void;
  /** An inspector to attach to the node's actor (live inspection), or undefined for none. */
  readonly inspectorFor?: (node: string) => Observer<InspectionEvent> | undefined;
}

/** What the registry reports as it goes, with only bounded facts: no node ids. */
export interface SessionObserver {
  transition(from: SessionState, to: SessionState): void;
  request(kind: FollowUpKind, typeUrl: TypeUrl): void;
}

/** What listing and counting sessions needs of each, without its view. */
export interface SessionSummary {
  readonly node: string;
  readonly state: SessionState;
  readonly instance: string;
}

/** The request kinds a stream sends after its first request. */
export type FollowUpKind = 'xds.requested' | 'xds.acked' | 'xds.nacked';

interface Session {
  readonly actor: Actor<SessionMachine>;
  readonly history: TransitionRing;
}

/**
 * The sessions of this instance: one root actor per node (spawning thousands of children
 * under one parent is quadratic in XState), keyed by node id. It turns what the server, the
 * store and the watchdog report into session events, and carries out the sessions' intents:
 * generating snapshots and handing responses to stream writers.
 */
export class SessionRegistry {
  readonly #options: SessionRegistryOptions;
  readonly #log: Logger;
  readonly #sessions = new Map<string, Session>();
  readonly #sinks = new Map<string, StreamSink>();
  readonly #views = new Subject<SessionView>();
  /** Set while a stream opens whose node says it holds configuration (see `catchUp`). */
  #arrivingHolding = false;
  /** Sessions whose generation waits for a store catch-up; asked again meanwhile, they keep waiting. */
  readonly #catchingUp = new Set<Session>();
  /** Of those, the ones whose catch-up failed, by node: the next watchdog tick tries again. */
  readonly #catchUpFailed = new Map<Session, string>();
  /** Sessions whose catch-up is done, generated in slices (a reconnect storm releases thousands at once). */
  #released: Array<readonly [string, Session]> = [];
  /** Store changes and ticks still being told to sessions, slice by slice. */
  #fanOuts = 0;

  /** A session's view each time it changes state or records a NACK. */
  readonly views: Observable<SessionView> = this.#views.asObservable();
  readonly #touches = new Subject<string>();
  /**
   * The node of a session whose status changed without a transition: a push, an ACK. No view
   * is built for these (one per push would cost 10,000 views a change): a consumer builds one
   * when it needs it. Emitted only while observed.
   */
  readonly touches: Observable<string> = this.#touches.asObservable();

  constructor(options: SessionRegistryOptions) {
    this.#options = options;
    this.#log = options.logger;
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** The first request of a new stream, carrying `node`. A newer stream supersedes an older one (I4). */
  open(stream: StreamInfo, sink: StreamSink, node: string, request: TypedRequest): void {
    this.#sinks.set(stream.id, sink);
    const session = this.#sessions.get(node) ?? this.#create(node);
    // The session asks for its snapshot as it takes the stream, within this send.
    this.#arrivingHolding = request.versionInfo !== '';
    try {
      session.actor.send({ type: 'stream.opened', at: this.#options.now(), stream, request });
    } finally {
      this.#arrivingHolding = false;
    }
  }

  request(node: string, streamId: string, kind: FollowUpKind, request: TypedRequest): void {
    const session = this.#sessions.get(node);
    if (!session) return;
    // A superseded stream's requests change nothing (the chart ignores them): not counted either.
    const { phase } = session.actor.getSnapshot().context;
    if ('stream' in phase && phase.stream.id === streamId) {
      this.#options.observer?.request(kind, request.typeUrl);
      if (kind !== 'xds.requested') this.#options.changed?.(node, kind === 'xds.nacked');
      if (kind === 'xds.acked') this.#touch(node);
    }
    if (this.#log.isLevelEnabled('debug')) {
      const { typeUrl, versionInfo: version, responseNonce: nonce } = request;
      this.#log.debug({ node, stream: streamId, kind, typeUrl, version, nonce }, 'request');
    }
    session.actor.send({ type: kind, at: this.#options.now(), streamId, request });
  }

  /** The stream ended. Only the session's current stream can disconnect it (I4). */
  close(node: string, streamId: string, reason: string): void {
    this.#sinks.delete(streamId);
    this.#sessions.get(node)?.actor.send({ type: 'stream.closed', at: this.#options.now(), streamId, reason });
  }

  /**
   * The store's projection moved: every session decides whether it needs a new snapshot.
   * Optimization: sessions hear of it in slices, so the pushes and ACKs of the first slices
   * flow while later ones generate, rather than after one loop over 10,000 sessions
   * (bench/sessions.bench.ts).
   */
  advance(revision: number): void {
    this.#fanOut([...this.#sessions], { type: 'store.advanced', at: this.#options.now(), revision });
  }

  /** The watchdog's safety net: sessions behind the store regenerate, and failed catch-ups are tried again. */
  tick(): void {
    if (this.#catchUpFailed.size > 0) {
      // One line a tick, not one a node: the store's own failure is logged where it happens.
      this.#log.warn({ nodes: this.#catchUpFailed.size }, 'nodes arriving with configuration still wait for the store to be read; trying again');
      for (const [session, node] of this.#catchUpFailed) {
        this.#catchUpFailed.delete(session);
        this.#awaitCatchUp(node, session);
      }
    }
    // A store change or tick still reaching sessions in slices will reach the rest: a tick
    // now would only do the same work again.
    if (this.#fanOuts > 0) return;
    const revision = this.#options.revision();
    // Optimization: the chart's `behind` guard, checked here first so that an idle fleet
    // costs no events at all (bench/sessions.bench.ts: ~10 µs a session a tick otherwise).
    const behind = [...this.#sessions].filter(([, session]) => session.actor.getSnapshot().context.attempted < revision);
    if (behind.length > 0) this.#fanOut(behind, { type: 'watchdog.ticked', at: this.#options.now(), revision });
  }

  /**
   * Tells `sessions` of `event` in slices, so that the pushes and ACKs of the first slices flow
   * while later ones generate, rather than after one loop over 10,000 sessions
   * (bench/sessions.bench.ts). A session evicted or replaced meanwhile is skipped.
   */
  #fanOut(sessions: ReadonlyArray<readonly [string, Session]>, event: SessionEvent): void {
    let next = 0;
    const slice = () => {
      const end = performance.now() + SLICE_MS;
      while (next < sessions.length) {
        const [node, session] = sessions[next++]!;
        if (this.#sessions.get(node) === session) session.actor.send(event);
        if (next % SLICE_CHECK === 0 && performance.now() >= end) break;
      }
      if (next < sessions.length) setImmediate(slice);
      else this.#fanOuts--;
    };
    this.#fanOuts++;
    slice();
  }

  /** Ends every stream with UNAVAILABLE and evicts every session, at once. */
  shutdown(reason: string): void {
    this.#shutDown([...this.#sessions.values()], reason);
  }

  /**
   * Ends every stream with UNAVAILABLE and evicts every session, spread evenly over `period`
   * ms, so that the fleet's reconnects reach the other instances as a flow, not a storm.
   * Resolves once the last session was told.
   */
  drain(period: number, reason: string): Promise<void> {
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

  list(): SessionView[] {
    return [...this.#sessions.values()].map((session) => this.#view(session));
  }

  /**
   * Every session's node, state and instance, read from its actor without building its view:
   * a page of 10,000 sessions is chosen from these, and only the page's views are built.
   */
  summaries(): SessionSummary[] {
    const instance = this.#options.instanceId;
    const out: SessionSummary[] = [];
    for (const [node, session] of this.#sessions) out.push({ node, state: session.actor.getSnapshot().value as SessionState, instance });
    return out;
  }

  /** Sessions per state, every state included: what `/metrics` reports, without building views. */
  counts(): Record<SessionState, number> {
    const counts: Record<SessionState, number> = { connecting: 0, 'awaiting-snapshot': 0, serving: 0, disconnected: 0, evicted: 0 };
    for (const session of this.#sessions.values()) counts[session.actor.getSnapshot().value as SessionState]++;
    return counts;
  }

  /**
   * Epoch ms at which the longest-waiting parked request arrived: a session in
   * `awaiting-snapshot` has waited since its stream's first request. Undefined when none waits.
   */
  oldestParkedSince(): number | undefined {
    let oldest: number | undefined;
    for (const session of this.#sessions.values()) {
      const { phase } = session.actor.getSnapshot().context;
      if (phase.state === 'awaiting-snapshot' && (oldest === undefined || phase.stream.openedAt < oldest)) oldest = phase.stream.openedAt;
    }
    return oldest;
  }

  /** Whether the node's last response of some type was NACKed (its latest nonce sent was refused). */
  nacking(node: string): boolean {
    const phase = this.#sessions.get(node)?.actor.getSnapshot().context.phase;
    if (phase === undefined) return false;
    if ('ledger' in phase) return phase.ledger.nacking();
    return phase.state === 'disconnected' && lastResponseNacked(phase.types);
  }

  get(node: string): SessionView | undefined {
    const session = this.#sessions.get(node);
    return session && this.#view(session);
  }

  /** What the node's current stream was last sent, per type, decoded for reading. */
  lastSent(node: string): Record<string, { version: string; nonce: string; resources: unknown[] }> | undefined {
    const session = this.#sessions.get(node);
    if (!session) return undefined;
    const { phase } = session.actor.getSnapshot().context;
    const out: Record<string, { version: string; nonce: string; resources: unknown[] }> = {};
    if (phase.state !== 'awaiting-snapshot' && phase.state !== 'serving') return out;
    for (const typeUrl of phase.ledger.requestedTypes()) {
      const sent = phase.ledger.lastSent(typeUrl);
      if (!sent) continue;
      out[SHORT_NAME[typeUrl]] = { version: sent.version, nonce: sent.nonce, resources: sent.resources.map((r) => decodeAny(r.any)) };
    }
    return out;
  }

  #create(node: string): Session {
    const { evictionGrace, clock, historySize = 32 } = this.#options;
    const history = new TransitionRing(historySize);
    let state: SessionState = 'connecting';
    const inspector = this.#options.inspectorFor?.(node);
    const actor = createActor(sessionMachine, {
      input: { node, evictionGrace },
      clock,
      inspect: (inspection: InspectionEvent) => {
        inspector?.next?.(inspection);
        if (inspection.type !== '@xstate.snapshot' || inspection.actorRef !== actor) return;
        const to = (inspection.snapshot as ReturnType<typeof actor.getSnapshot>).value as SessionState;
        if (to === state) return;
        const from = state;
        state = to;
        this.#record(session, node, from, to, inspection.event);
      },
    });
    const session: Session = { actor, history };
    actor.on('*', (intent) => this.#carryOut(node, session, intent));
    actor.subscribe({
      complete: () => this.#remove(node, session),
      error: (error) => {
        this.#log.error({ err: error, node, state }, 'session failed; evicting it');
        const { phase } = actor.getSnapshot().context;
        if ('stream' in phase) this.#end(phase.stream.id, { code: 'UNAVAILABLE', message: `internal error in the session of ${node}` });
        this.#remove(node, session);
      },
    });
    this.#sessions.set(node, session);
    actor.start();
    return session;
  }

  #carryOut(node: string, session: Session, intent: SessionIntent): void {
    switch (intent.type) {
      case 'generate': {
        // Waiting for a catch-up already: it generates when done, from the newer projection.
        if (this.#catchingUp.has(session)) return;
        if (!this.#arrivingHolding || this.#options.catchUp === undefined) return this.#generate(node, session);
        this.#catchingUp.add(session);
        this.#awaitCatchUp(node, session);
        return;
      }
      case 'send':
        if (this.#log.isLevelEnabled('debug')) {
          const { typeUrl, version, nonce, resources } = intent.response;
          this.#log.debug({ node, stream: intent.streamId, typeUrl, version, nonce, resources: resources.length }, 'push');
        }
        this.#sinks.get(intent.streamId)?.send(intent.response);
        this.#touch(node);
        return;
      case 'end':
        this.#log.info({ node, stream: intent.streamId, code: intent.status.code, reason: intent.status.message }, 'ending stream');
        this.#end(intent.streamId, intent.status);
        return;
      case 'nacked': {
        const { typeUrl, version, nonce, message } = intent;
        this.#log.warn({ node, typeUrl, version, nonce, error: message }, 'NACK');
        const state = session.actor.getSnapshot().value as SessionState;
        session.history.push({
          at: new Date(this.#options.now()).toISOString(),
          event: 'xds.nacked',
          from: state,
          to: state,
          detail: { typeUrl, version, nonce, message },
        });
        this.#publish(session);
        return;
      }
    }
  }

  #shutDown(sessions: readonly Session[], reason: string): void {
    const event: SessionEvent = { type: 'shutdown.requested', at: this.#options.now(), reason };
    for (const session of sessions) session.actor.send(event);
  }

  /**
   * Generates once the store has read the log to its end. If it cannot (the store is down),
   * the node stays unanswered rather than be sent less than it holds, and the next tick tries
   * again.
   */
  #awaitCatchUp(node: string, session: Session): void {
    this.#options.catchUp!().then(
      () => this.#release(node, session),
      () => {
        if (this.#catchingUp.has(session)) this.#catchUpFailed.set(session, node);
      },
    );
  }

  #release(node: string, session: Session): void {
    this.#released.push([node, session]);
    if (this.#released.length > 1) return;
    const slice = () => {
      const end = performance.now() + SLICE_MS;
      do {
        for (const [node, session] of this.#released.splice(0, SLICE_CHECK)) {
          this.#catchingUp.delete(session);
          if (this.#sessions.get(node) === session) this.#generate(node, session);
        }
      } while (this.#released.length > 0 && performance.now() < end);
      if (this.#released.length > 0) setImmediate(slice);
    };
    setImmediate(slice);
  }

  #generate(node: string, session: Session): void {
    const result = this.#options.generate(node);
    const at = this.#options.now();
    session.actor.send(
      result.ok
        ? { type: 'snapshot.generated', at, snapshot: result.snapshot }
        : { type: 'snapshot.failed', at, revision: this.#options.revision(), error: result.error },
    );
  }

  #end(streamId: string, status: Parameters<StreamSink['end']>[0]): void {
    const sink = this.#sinks.get(streamId);
    this.#sinks.delete(streamId);
    sink?.end(status);
  }

  #record(session: Session, node: string, from: SessionState, to: SessionState, event: AnyEventObject): void {
    const detail = detailOf(event as SessionEvent);
    const record: TransitionRecord = {
      at: new Date(this.#options.now()).toISOString(),
      event: event.type,
      from,
      to,
      ...(detail && { detail }),
    };
    session.history.push(record);
    this.#options.observer?.transition(from, to);
    this.#options.changed?.(node, true);
    if (this.#log.isLevelEnabled('debug')) this.#log.debug({ node, from, to, event: event.type, ...detail }, 'session transition');
    this.#publish(session);
  }

  #touch(node: string): void {
    if (this.#touches.observed) this.#touches.next(node);
  }

  #publish(session: Session): void {
    if (this.#views.observed) this.#views.next(this.#view(session));
  }

  #remove(node: string, session: Session): void {
    // I3: an evicted session leaves nothing behind. Only this session's own entry is removed.
    if (this.#sessions.get(node) === session) this.#sessions.delete(node);
    this.#catchingUp.delete(session);
    this.#catchUpFailed.delete(session);
  }

  #view(session: Session): SessionView {
    return viewOf(session.actor.getSnapshot(), this.#options.instanceId, session.history.toArray());
  }
}

/** Whether some type's latest response (the last nonce sent) was NACKed rather than ACKed or unanswered. */
export function lastResponseNacked(types: Readonly<Record<string, TypeStatus>>): boolean {
  for (const type in types) {
    const { sent, nacked } = types[type]!;
    if (sent !== undefined && nacked?.nonce === sent.nonce) return true;
  }
  return false;
}

function detailOf(event: SessionEvent): Record<string, string | number> | undefined {
  switch (event.type) {
    case 'stream.opened': {
      // A reconnecting node's first request names the version it already holds.
      const { typeUrl, versionInfo } = event.request;
      return { stream: event.stream.id, peer: event.stream.peer, typeUrl, ...(versionInfo !== '' && { version: versionInfo }) };
    }
    case 'stream.closed':
      return { stream: event.streamId, reason: event.reason };
    case 'snapshot.generated':
      return { revision: event.snapshot.revision, resources: event.snapshot.resourceCount };
    case 'snapshot.failed':
      return { revision: event.revision, code: event.error.code, message: event.error.message };
    case 'shutdown.requested':
      return { reason: event.reason };
    default:
      return undefined;
  }
}
