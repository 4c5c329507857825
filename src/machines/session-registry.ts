import type { Logger } from 'pino';
import { Subject, type Observable } from 'rxjs';
import { createActor, type Actor, type ActorOptions, type AnyEventObject, type InspectionEvent } from 'xstate';
import { decodeAny } from '../xds/decode.js';
import type { Snapshot } from '../xds/snapshot.js';
import type { StreamSink } from '../xds/stream-writer.js';
import { SHORT_NAME } from '../xds/type-urls.js';
import type { SessionEvent, SessionIntent, StreamInfo, TypedRequest } from './session-events.js';
import { sessionMachine, type SessionMachine } from './session-machine.js';
import type { SessionState, SessionView, TransitionRecord } from './session-view.js';
import { viewOf } from './session-view-of.js';
import { TransitionRing } from './transition-ring.js';

type Clock = NonNullable<ActorOptions<SessionMachine>['clock']>;

/** Sessions told of a store change per turn of the event loop. */
const FAN_OUT_SLICE = 256;

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
  /** The clock XState schedules eviction on; a SimulatedClock in tests. */
  readonly clock?: Clock;
  readonly logger: Logger;
  /** Transitions kept per session for inspection. Default 32. */
  readonly historySize?: number;
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
  /** Store changes still being told to sessions, slice by slice. */
  #fanOuts = 0;

  /** A session's view each time it changes state or records a NACK. */
  readonly views: Observable<SessionView> = this.#views.asObservable();

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
    session.actor.send({ type: 'stream.opened', at: this.#options.now(), stream, request });
  }

  request(node: string, streamId: string, kind: FollowUpKind, request: TypedRequest): void {
    this.#sessions.get(node)?.actor.send({ type: kind, at: this.#options.now(), streamId, request });
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
    const event: SessionEvent = { type: 'store.advanced', at: this.#options.now(), revision };
    const sessions = [...this.#sessions];
    let next = 0;
    const slice = () => {
      const end = Math.min(next + FAN_OUT_SLICE, sessions.length);
      for (; next < end; next++) {
        const [node, session] = sessions[next]!;
        if (this.#sessions.get(node) === session) session.actor.send(event);
      }
      if (next < sessions.length) setImmediate(slice);
      else this.#fanOuts--;
    };
    this.#fanOuts++;
    slice();
  }

  /** The watchdog's safety net: sessions behind the store regenerate. */
  tick(): void {
    // A store change still reaching sessions in slices will reach the rest: a tick now would
    // only do the same work in one long loop.
    if (this.#fanOuts > 0) return;
    const revision = this.#options.revision();
    const event: SessionEvent = { type: 'watchdog.ticked', at: this.#options.now(), revision };
    for (const session of this.#sessions.values()) {
      // Optimization: the chart's `behind` guard, checked here first so that an idle fleet
      // costs no events at all (bench/sessions.bench.ts: ~10 µs a session a tick otherwise).
      if (session.actor.getSnapshot().context.attempted < revision) session.actor.send(event);
    }
  }

  /** Ends every stream with UNAVAILABLE and evicts every session, at once. */
  shutdown(reason: string): void {
    const event: SessionEvent = { type: 'shutdown.requested', at: this.#options.now(), reason };
    for (const session of this.#sessions.values()) session.actor.send(event);
  }

  list(): SessionView[] {
    return [...this.#sessions.values()].map((session) => this.#view(session));
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
    const actor = createActor(sessionMachine, {
      input: { node, evictionGrace },
      ...(clock && { clock }),
      inspect: (inspection: InspectionEvent) => {
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
        const result = this.#options.generate(node);
        const at = this.#options.now();
        session.actor.send(
          result.ok
            ? { type: 'snapshot.generated', at, snapshot: result.snapshot }
            : { type: 'snapshot.failed', at, revision: this.#options.revision(), error: result.error },
        );
        return;
      }
      case 'send':
        this.#sinks.get(intent.streamId)?.send(intent.response);
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
    if (this.#log.isLevelEnabled('debug')) this.#log.debug({ node, from, to, event: event.type, ...detail }, 'session transition');
    this.#publish(session);
  }

  #publish(session: Session): void {
    if (this.#views.observed) this.#views.next(this.#view(session));
  }

  #remove(node: string, session: Session): void {
    // I3: an evicted session leaves nothing behind. Only this session's own entry is removed.
    if (this.#sessions.get(node) === session) this.#sessions.delete(node);
  }

  #view(session: Session): SessionView {
    return viewOf(session.actor.getSnapshot(), this.#options.instanceId, session.history.toArray());
  }
}

function detailOf(event: SessionEvent): Record<string, string | number> | undefined {
  switch (event.type) {
    case 'stream.opened':
      return { stream: event.stream.id, peer: event.stream.peer, typeUrl: event.request.typeUrl };
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
