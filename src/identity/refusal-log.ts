import type { RefusedStream } from '../xds/index.js';

/** How many refusals `/sessions` and the UI list. */
const KEPT = 20;

/** What this instance refused on the xDS port: a count, and the last few (`GET /sessions`, the UI). */
export interface RefusalSummary {
  readonly total: number;
  readonly recent: readonly RefusedStream[];
}

/** The refused streams of this instance: counted, and the last few kept, newest first. */
export class RefusalLog {
  #total = 0;
  #recent: RefusedStream[] = [];

  record(refused: RefusedStream): void {
    this.#total++;
    this.#recent = [refused, ...this.#recent.slice(0, KEPT - 1)];
  }

  summary(): RefusalSummary {
    return { total: this.#total, recent: this.#recent };
  }
}
