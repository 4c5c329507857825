import { recordedSessions, type FleetSession, type RecordedSource } from './fleet-sessions.js';

/**
 * The other instances' sessions as they saved them, read at most once per `reuseMs`: they save
 * that often (`recordInterval`), and every write's warnings and rollouts look at them (issue 31).
 * A failed read is not kept: the next caller reads again.
 */
export class SavedSessions {
  readonly #source: () => RecordedSource;
  readonly #now: () => number;
  readonly #reuseMs: number;
  #last: { readonly at: number; readonly read: Promise<readonly FleetSession[]> } | undefined;

  constructor(source: () => RecordedSource, options: { readonly now: () => number; readonly reuseMs: number }) {
    this.#source = source;
    this.#now = options.now;
    this.#reuseMs = options.reuseMs;
  }

  read(): Promise<readonly FleetSession[]> {
    const now = this.#now();
    if (this.#last === undefined || now - this.#last.at >= this.#reuseMs) {
      const read = recordedSessions(this.#source());
      read.catch(() => {
        if (this.#last?.read === read) this.#last = undefined;
      });
      this.#last = { at: now, read };
    }
    return this.#last.read;
  }
}
