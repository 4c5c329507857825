import { createActor, fromTransition, type ActorOptions, type AnyActorRef, type AnyActorLogic } from 'xstate';

type Clock = NonNullable<ActorOptions<AnyActorLogic>['clock']>;

/** The most sessions created under one system. */
const SESSIONS_PER_SYSTEM = 64;

/**
 * What a parent of sessions is: it takes what XState tells a parent (a session ended, or
 * failed, which the registry hears from the session itself) and keeps nothing.
 */
const parentOfSessions = fromTransition((state: null) => state, null);

/**
 * The XState systems sessions are created in, a few sessions each: a root actor brings a system
 * of its own (its maps of actors and timers, and some twenty closures), 1.8 KB of a session's
 * 4.6 KB actor; under a shared parent a session has none. A system hosts at most
 * SESSIONS_PER_SYSTEM sessions in its life, because XState cancels a stopped actor's timers by
 * walking every timer of its system: ten thousand evictions in one system would each walk the
 * eviction timers of all the others. A full system's parent is let go, and lives on only as
 * long as its sessions.
 */
export class SessionSystems {
  readonly #clock: Clock;
  #parent: AnyActorRef | undefined;
  #hosted = 0;

  /** `clock` runs the system's timers: the sessions' own, for their eviction. */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** The parent the next session is created under. */
  next(): AnyActorRef {
    if (this.#parent === undefined || this.#hosted === SESSIONS_PER_SYSTEM) {
      this.#parent = createActor(parentOfSessions, { clock: this.#clock }).start();
      this.#hosted = 0;
    }
    this.#hosted++;
    return this.#parent;
  }
}
