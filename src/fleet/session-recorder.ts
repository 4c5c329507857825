import type { Logger } from 'pino';
import type { Observable, Subscription } from 'rxjs';
import type { SessionView } from '../machines/index.js';
import type { SessionScheduler } from '../sessions/index.js';
import type { InstanceRecord, SessionRecordInput, SessionRecords } from '../store/index.js';

/** Transitions kept in a node's record: enough to continue its story on another instance. */
const RECORDED_TRANSITIONS = 10;

export interface SessionRecorderOptions {
  readonly records: SessionRecords;
  /** This instance as other instances see it; its addresses are known once it listens. */
  readonly instance: () => Omit<InstanceRecord, 'seenAt'>;
  /** This instance's sessions now. */
  readonly sessions: { get(node: string): SessionView | undefined; nodes(): Iterable<string> };
  /** An instance not seen for this long is dead, and its records expire. */
  readonly ttl: number;
  /** Epoch ms. */
  readonly now: () => number;
  readonly logger: Logger;
  /** The sessions' scheduler: records are built in its slices of time, in turn with the sessions' own work. */
  readonly scheduler: Pick<SessionScheduler, 'schedule' | 'settled'>;
}

/**
 * Saves this instance's sessions in the store for the rest of the fleet (issue 4): sessions
 * that changed are marked with `touched`, and `flush` saves them all in one batch with the
 * instance's heartbeat, so a fleet of ACKs costs one write per interval, never one per ACK.
 * Each flush also expires instances that stopped saving.
 */
export class SessionRecorder {
  readonly #options: SessionRecorderOptions;
  /** Nodes to save, and whether their story changed too. */
  #dirty = new Map<string, boolean>();
  #flushing: Promise<void> | undefined;
  #joined = false;

  constructor(options: SessionRecorderOptions) {
    this.#options = options;
  }

  /**
   * Joins the fleet: saves this instance's sessions now, then at every tick of `ticks` (every
   * `recordInterval`); unsubscribing `saving` stops the saves, and `leave` removes the records.
   */
  static async join(options: SessionRecorderOptions, ticks: Observable<unknown>): Promise<{ readonly recorder: SessionRecorder; readonly saving: Subscription }> {
    const recorder = new SessionRecorder(options);
    await recorder.flush();
    return { recorder, saving: ticks.subscribe(() => void recorder.flush()) };
  }

  /** The node's session changed (or ended): its record, and its story if that changed, are saved with the next flush. */
  touched(node: string, story: boolean): void {
    if (story || !this.#dirty.has(node)) this.#dirty.set(node, story);
  }

  /** Saves what changed since the last flush; a flush asked for while one runs joins it. */
  flush(): Promise<void> {
    this.#flushing ??= this.#save().finally(() => (this.#flushing = undefined));
    return this.#flushing;
  }

  /** Removes this instance and its records: it stops cleanly, and its nodes go elsewhere. */
  async leave(): Promise<void> {
    await this.#flushing;
    await this.#options.records.leave(this.#options.instance().id);
  }

  async #save(): Promise<void> {
    const { records, sessions, ttl, logger, now, scheduler } = this.#options;
    const nodes = this.#dirty;
    this.#dirty = new Map();
    const upserts: SessionRecordInput[] = [];
    const removals: string[] = [];
    let failure: { readonly error: unknown } | undefined;
    let built = 0;
    // Optimization: after a change every session ACKs, and 10,000 views in one loop would
    // stall the event loop for over 100 ms (bench/README.md, ui): built in the scheduler's
    // slices, in the background, so that the next change or a storm's requests never wait behind them.
    scheduler.schedule(
      [...nodes],
      ([node, story]) => {
        try {
          const view = sessions.get(node);
          if (view) upserts.push(recordOf(view, story, now));
          else removals.push(node);
        } catch (error) {
          // Thrown in a slice, it would stop the sessions' work too: this flush fails instead.
          failure ??= { error };
        }
        built++;
      },
      'background',
    );
    // Built at once when nothing was queued before it: saved from the state the flush was asked
    // in, within its turn. Otherwise they are built over later turns, once the sessions' work is done.
    if (built < nodes.size) await scheduler.settled('background');
    if (failure !== undefined) throw failure.error;
    try {
      const joined = await records.save({ instance: this.#options.instance(), upserts, removals });
      // New to the store (first save, expired while it could not save, or a restart): others
      // may have dropped its records, so every session it has is saved again.
      if (joined) {
        if (this.#joined) {
          logger.warn(
            { ttl },
            'this instance’s records were gone (it could not save within the ttl) or taken (another process has the same instance id): saving every session again',
          );
        }
        this.#joined = true;
        for (const node of sessions.nodes()) this.touched(node, true);
      }
    } catch (error) {
      for (const [node, story] of nodes) this.touched(node, story);
      logger.warn({ err: error, records: nodes.size }, 'saving session records failed; retrying with the next flush');
      return;
    }
    try {
      const expired = await records.expire(ttl);
      if (expired > 0) logger.info({ instances: expired, ttl }, 'expired the session records of instances that stopped saving');
    } catch (error) {
      logger.warn({ err: error, ttl }, 'expiring the records of dead instances failed; retrying with the next flush');
    }
  }
}

/** The view without its transitions, which are the story, saved only with `story`. */
function recordOf({ transitions, ...body }: SessionView, story: boolean, now: () => number): SessionRecordInput {
  return {
    node: body.node,
    state: body.state,
    // Only a session still `connecting` has no stream yet; it has one within the same turn.
    since: body.stream?.openedAt ?? new Date(now()).toISOString(),
    body,
    ...(story && { story: transitions.slice(-RECORDED_TRANSITIONS) }),
  };
}
