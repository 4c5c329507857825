import type { Actor, Observer, SnapshotFrom } from 'xstate';
import { stateIdOf, type SessionEvent, type SessionMachine, type SessionStateId } from '../machines/index.js';
import type { SessionStory } from './session-story.js';

/** One node's session: its actor and its story. */
export interface Session {
  readonly node: string;
  readonly actor: Actor<SessionMachine>;
  readonly story: SessionStory;
  /**
   * The chart state the session rests in, kept as the actor moves: what counting and listing
   * 10,000 sessions reads, without walking each snapshot's value.
   */
  readonly at: SessionStateId;
  /** Sends the actor an event, remembered as the cause of the move it makes, if any. */
  send(event: SessionEvent): void;
}

/** What a session tells the registry that keeps it. */
export interface SessionKeeper {
  /** The chart came to rest in another state; `cause` is the event that moved it, undefined for a timer. */
  moved(session: LiveSession, to: SessionStateId, cause: SessionEvent | undefined): void;
  /** The chart reached its final state. */
  ended(session: LiveSession): void;
  /** An action threw while the actor took `cause` (undefined: a timer's step), and the actor stopped. */
  failed(session: LiveSession, error: unknown, cause: SessionEvent | undefined): void;
}

/**
 * A session as the registry keeps it, observing its own actor. A class: XState binds an
 * observer's methods, and a class's are shared, where an object of arrow functions costs three
 * closures and their bindings per session (2 KB each at 10,000 sessions, bench/README.md).
 */
export class LiveSession implements Session, Observer<SnapshotFrom<SessionMachine>> {
  /** Changed by the registry alone, as it counts the move. */
  at: SessionStateId = 'connecting';
  readonly #keeper: SessionKeeper;
  /**
   * Events sent and not yet processed, in the mailbox's order: XState tells observers once per
   * event it processes, and an event sent while another is processed (a generation during
   * `stream.opened`) waits in the mailbox. A move with no cause here was made by a timer.
   */
  readonly #causes: SessionEvent[] = [];

  constructor(
    readonly node: string,
    readonly actor: Actor<SessionMachine>,
    readonly story: SessionStory,
    keeper: SessionKeeper,
  ) {
    this.#keeper = keeper;
  }

  send(event: SessionEvent): void {
    // An actor that ended processes nothing: its cause would never be taken.
    if (this.actor.getSnapshot().status !== 'active') return;
    this.#causes.push(event);
    this.actor.send(event);
  }

  next(snapshot: SnapshotFrom<SessionMachine>): void {
    const cause = this.#causes.shift();
    const to = stateIdOf(snapshot.value);
    // A newer stream served within its opening step leaves the session where it was: still a step of its story.
    if (to !== this.at || cause?.type === 'stream.opened') this.#keeper.moved(this, to, cause);
  }

  complete(): void {
    this.#keeper.ended(this);
  }

  error(error: unknown): void {
    // The event being processed is still first in line: `next` is not called for a failed step.
    this.#keeper.failed(this, error, this.#causes[0]);
  }
}
