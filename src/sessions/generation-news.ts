import { generatesAlike, type GenerationInput } from '../mesh/index.js';

/**
 * Which of the store's projections are news to the sessions: those that change what some node
 * is generated (`generatesAlike`). A round of DataplaneTls statuses that changes no mesh's TLS
 * view is not: at 10,000 nodes each round would otherwise make every session generate again for
 * nothing (about 40 µs of CPU a node, its chart step included; bench/README.md).
 */
export class GenerationNews {
  /** Held until the next news: one projection older than the store's at most. */
  #last: GenerationInput;

  /** `first`: the projection the sessions start from. */
  constructor(first: GenerationInput) {
    this.#last = first;
  }

  /** The revision of the last projection that was news: what a session is current at (the watchdog's `behind`). */
  get revision(): number {
    return this.#last.revision;
  }

  /** Whether `projection` is news to the sessions; it is what they are current at from then on if so. */
  heard(projection: GenerationInput): boolean {
    if (generatesAlike(this.#last, projection)) return false;
    this.#last = projection;
    return true;
  }
}
