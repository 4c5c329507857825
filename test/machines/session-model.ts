import { getPathsFromEvents, getShortestPaths, type StatePath } from '@xstate/graph';
import { fromTransition, type SnapshotFrom } from 'xstate';

/**
 * A reference model of one node's session, written from DESIGN §2 and §4 and what a user of
 * Envoy expects, not from the machine the server runs: it says where a session should rest
 * after each thing that can happen to it. Paths through it are replayed against a real control
 * plane (session-model.test.ts), whose reported state must match the model's at every step.
 */

/** Where the session rests. `none`: no session yet; `stopped`: the control plane was shut down. */
export type ModelPhase = 'none' | 'generating' | 'store-unreadable' | 'serving' | 'disconnected' | 'evicted' | 'stopped';

export interface ModelState {
  readonly phase: ModelPhase;
  /** The node has been served on some stream. */
  readonly served: boolean;
  /** The client holds configuration it was sent (it would reconnect naming its versions). */
  readonly holds: boolean;
  /** What the client holds is not what the store says now (a change it missed while away). */
  readonly stale: boolean;
  readonly dataplane: boolean;
  /** The store can be read (a catch-up succeeds). */
  readonly storeUp: boolean;
  /** Streams the node opened, up to 2: enough to tell a first stream from a later one. */
  readonly streams: 0 | 1 | 2;
}

export type ModelEvent =
  /** A client that holds nothing (a fresh Envoy) opens a stream. */
  | { readonly type: 'connect' }
  /** The client opens a new stream naming the versions it holds (after a cut, a restart, a move). */
  | { readonly type: 'reconnect' }
  /**
   * A new stream of the node opens while one is open; the old one, still writable, sends a NACK
   * before the new one takes over, and its late words after (see `late`).
   */
  | { readonly type: 'supersede' }
  /**
   * The node's earlier stream (superseded, or closed) sends an ACK, a NACK and a new
   * subscription, and closes, after the current stream took over: nothing changes (I4).
   */
  | { readonly type: 'late' }
  | { readonly type: 'close' }
  /** On the current stream: an ACK again, a NACK of the last clusters, a request that changes nothing. */
  | { readonly type: 'ack' }
  | { readonly type: 'nack' }
  | { readonly type: 'request' }
  /** Store writes: the node's Dataplane changed, deleted, created again. */
  | { readonly type: 'write' }
  | { readonly type: 'delete' }
  | { readonly type: 'create' }
  | { readonly type: 'storeDown' }
  | { readonly type: 'storeUp' }
  | { readonly type: 'tick' }
  /** The eviction grace passes. */
  | { readonly type: 'grace' }
  /**
   * In a mesh with mTLS, the node's certificate reaches 2/3 of its life (the injected clock moves
   * past it): renewed, pushed as a new Secret. Taken only by the mTLS scenarios, from a phase
   * holding a stream, where no eviction timer could fire with it; the session rests where it was.
   */
  | { readonly type: 'renew' }
  | { readonly type: 'shutdown' };

export const INITIAL: ModelState = { phase: 'none', served: false, holds: false, stale: false, dataplane: true, storeUp: true, streams: 0 };

const STREAMING: ReadonlySet<ModelPhase> = new Set(['generating', 'store-unreadable', 'serving']);
const AWAY: ReadonlySet<ModelPhase> = new Set(['none', 'disconnected', 'evicted']);

/** A stream arrives; a client naming versions is answered only once the store was read to its end. */
function arrive(state: ModelState, holding: boolean): ModelState {
  const streams = state.streams === 0 ? 1 : 2;
  if (holding && !state.storeUp) return { ...state, phase: 'store-unreadable', streams };
  return serveOrWait({ ...state, holds: holding && state.holds, streams });
}

/** A snapshot is generated: served if the Dataplane exists, else it waits for it. */
function serveOrWait(state: ModelState): ModelState {
  return state.dataplane ? { ...state, phase: 'serving', served: true, holds: true, stale: false } : { ...state, phase: 'generating' };
}

/** A store write, seen by the session: regenerated if it has a stream; missed (stale) if away. */
function written(state: ModelState, dataplane: boolean): ModelState {
  const next = { ...state, dataplane };
  switch (state.phase) {
    case 'serving':
      // Deleted while served: the stream is ended, nothing pushed; the client keeps what it had.
      return dataplane ? serveOrWait(next) : { ...next, phase: 'evicted', stale: true };
    case 'generating':
    case 'store-unreadable':
      return serveOrWait(next);
    default:
      return { ...next, stale: state.holds };
  }
}

/** What may happen in `state`, and nothing else: the events a path may take from it. */
export function eventsFor(state: ModelState): ModelEvent[] {
  const { phase } = state;
  if (phase === 'stopped') return [];
  const events: ModelEvent[] = [];
  if (AWAY.has(phase)) events.push({ type: 'connect' });
  if (AWAY.has(phase) && state.holds) events.push({ type: 'reconnect' });
  if (STREAMING.has(phase)) events.push({ type: 'supersede' }, { type: 'close' }, { type: 'ack' }, { type: 'nack' }, { type: 'request' });
  if (STREAMING.has(phase) && state.streams === 2) events.push({ type: 'late' });
  if (state.storeUp) {
    events.push(state.dataplane ? { type: 'write' } : { type: 'create' });
    if (state.dataplane) events.push({ type: 'delete' });
    events.push({ type: 'storeDown' });
  } else {
    events.push({ type: 'storeUp' });
  }
  events.push({ type: 'tick' });
  if (phase === 'disconnected') events.push({ type: 'grace' });
  if (phase !== 'none') events.push({ type: 'shutdown' });
  return events;
}

/** Where the session rests after `event`: the reference the server is held to. */
export function step(state: ModelState, event: ModelEvent): ModelState {
  switch (event.type) {
    case 'connect':
      return arrive({ ...state, holds: false }, false);
    case 'reconnect':
      return arrive(state, true);
    case 'supersede':
      return arrive(state, state.holds);
    case 'close':
      return { ...state, phase: 'disconnected' };
    case 'ack':
    case 'nack':
    case 'request':
    case 'late':
      return state;
    case 'write':
      return written(state, true);
    case 'delete':
      return written(state, false);
    case 'create':
      return written(state, true);
    case 'storeDown':
      return { ...state, storeUp: false };
    case 'storeUp':
      return { ...state, storeUp: true };
    case 'tick':
      // The watchdog tries a catch-up the store could not serve again; anything else is already current (I2).
      return state.phase === 'store-unreadable' && state.storeUp ? serveOrWait(state) : state;
    case 'grace':
      return { ...state, phase: 'evicted' };
    case 'renew':
      return state;
    case 'shutdown':
      return { ...state, phase: 'stopped' };
  }
}

export const sessionModel = fromTransition((state: ModelState, event: ModelEvent) => step(state, event), INITIAL);

export type ModelSnapshot = SnapshotFrom<typeof sessionModel>;
export type ModelPath = StatePath<ModelSnapshot, ModelEvent>;

const serializeState = (snapshot: ModelSnapshot) => JSON.stringify(snapshot.context);
const traversal = {
  events: (snapshot: ModelSnapshot) => eventsFor(snapshot.context),
  serializeState,
  serializeEvent: (event: ModelEvent) => event.type,
};

/**
 * Transitions the generated paths must take, wherever they can be taken, beyond reaching every
 * state: each is a step that may leave the model where it was, or in a state a shorter path
 * reaches, so a path to every state alone would not take it. The shortest path to each state
 * from which one can be taken is extended by it.
 */
export const CHOSEN_TRANSITIONS: Readonly<Record<string, (state: ModelState, event: ModelEvent) => boolean>> = {
  // kuma#2171's own path: a change is missed while away, and the node comes back naming the old versions.
  'a reconnect after a change missed while away': (state, event) => event.type === 'reconnect' && state.stale,
  'the catch-up the store failed, retried on a tick once it can be read': (state, event) => event.type === 'tick' && state.phase === 'store-unreadable' && state.storeUp,
  'an earlier stream’s late words': (state, event) => event.type === 'late',
};

/** Paths chosen by hand for what the model must cover: each a scenario of the issue or of kuma#2171. */
export const SCENARIOS: Readonly<Record<string, readonly ModelEvent['type'][]>> = {
  // The seed: served, closed, back before the grace and after it, each time served afresh; a change meanwhile.
  'the seed scenario, back before and after the grace': ['connect', 'ack', 'close', 'tick', 'reconnect', 'ack', 'close', 'write', 'grace', 'reconnect', 'ack'],
  'a change missed while away, then a reconnect': ['connect', 'close', 'write', 'write', 'reconnect', 'ack', 'request', 'close', 'reconnect'],
  'superseded while awaiting, then while serving': ['delete', 'connect', 'supersede', 'create', 'supersede', 'nack', 'supersede', 'close', 'reconnect'],
  'a catch-up the store fails, retried on ticks': ['connect', 'close', 'storeDown', 'reconnect', 'tick', 'storeUp', 'tick', 'ack', 'write'],
  'the Dataplane deleted while served, and back': ['connect', 'ack', 'delete', 'reconnect', 'create', 'nack', 'close', 'grace', 'connect'],
  'shutdown while serving, after a NACK': ['connect', 'nack', 'request', 'write', 'supersede', 'ack', 'write', 'shutdown'],
  'shutdown while away': ['connect', 'close', 'storeDown', 'shutdown'],
};

/**
 * Paths replayed in a mesh with strict mTLS (session-model-mtls.test.ts): renewals while served,
 * while the store cannot be read, across a reconnect and a missed change, and a shutdown after
 * one. At every step no Listener or Cluster the client holds names a Secret it was not sent (I8).
 */
export const MTLS_SCENARIOS: Readonly<Record<string, readonly ModelEvent['type'][]>> = {
  'renewed twice while served, ACKed and NACKed': ['connect', 'renew', 'ack', 'renew', 'nack', 'request', 'renew'],
  'renewed while the store cannot be read, then a catch-up retried': ['connect', 'storeDown', 'renew', 'close', 'reconnect', 'renew', 'tick', 'storeUp', 'tick', 'renew'],
  'renewed across a missed change and a reconnect': ['connect', 'renew', 'close', 'write', 'reconnect', 'renew', 'supersede', 'renew', 'write'],
  'renewed, then the Dataplane deleted and back, then evicted': ['connect', 'renew', 'delete', 'create', 'connect', 'renew', 'close', 'grace'],
  'served once its Dataplane is created, renewed, then shut down': ['delete', 'connect', 'create', 'renew', 'shutdown'],
};

/** What may happen in a mesh with mTLS: what `eventsFor` allows, and a renewal while a stream is held. */
export function mtlsEventsFor(state: ModelState): ModelEvent[] {
  return STREAMING.has(state.phase) ? [...eventsFor(state), { type: 'renew' }] : eventsFor(state);
}

/** The paths of the mTLS scenarios. */
export function mtlsScenarioPaths(): ModelPath[] {
  const mtlsTraversal = { ...traversal, events: (snapshot: ModelSnapshot) => mtlsEventsFor(snapshot.context) };
  return unique(Object.values(MTLS_SCENARIOS).flatMap((types) => pathOf(types, mtlsTraversal)));
}

/** The path that takes `types` from the start. */
const pathOf = (types: readonly ModelEvent['type'][], through = traversal): ModelPath[] => getPathsFromEvents(sessionModel, types.map((type) => ({ type })) as ModelEvent[], through);

/** The events of a path, its init step left out. */
const typesOf = (path: ModelPath) => path.steps.map((s) => s.event.type).filter((type) => (type as string) !== 'xstate.init');

/**
 * The generated paths: the shortest path to every state of the model (each combination of
 * phase and facts it can be in), and each of those extended by a `CHOSEN_TRANSITIONS` step
 * where it can take one.
 */
export function generatedPaths(): ModelPath[] {
  const shortest = getShortestPaths(sessionModel, { ...traversal, stopWhen: (snapshot) => snapshot.context.phase === 'stopped' });
  const chosen = Object.values(CHOSEN_TRANSITIONS);
  const extended = shortest.flatMap((path) =>
    eventsFor(path.state.context)
      .filter((event) => chosen.some((takes) => takes(path.state.context, event)))
      .flatMap((event) => pathOf([...typesOf(path), event.type])),
  );
  return unique([...shortest, ...extended]);
}

/** The paths replayed: the generated ones, and the scenarios chosen by hand. */
export function modelPaths(): ModelPath[] {
  return unique([...generatedPaths(), ...Object.values(SCENARIOS).flatMap((types) => pathOf(types))]);
}

/** Paths with at least one step, each sequence of events once. */
function unique(paths: readonly ModelPath[]): ModelPath[] {
  const byEvents = new Map<string, ModelPath>();
  for (const found of paths) {
    // A path may start with the logic's own init step: nothing happens to the session there.
    const path = { ...found, steps: found.steps.filter((s) => (s.event.type as string) !== 'xstate.init') };
    if (path.steps.length === 0) continue;
    byEvents.set(path.steps.map((s) => s.event.type).join(' '), path);
  }
  return [...byEvents.values()];
}
