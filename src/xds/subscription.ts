import { FULL_STATE, type TypeUrl } from './type-urls.js';

const WILDCARD = '*';

/**
 * What a SotW client is subscribed to for one type on one stream, with the legacy wildcard
 * rule (xDS "How the client specifies what resources to return"): for Listener and Cluster,
 * an empty `resource_names` means `*` until the client has named any resource on the stream;
 * after that an empty list means nothing. `[]` → `[*, A]` → `[A]` → `[]` is: all, all plus A,
 * only A, nothing.
 */
export class Subscription {
  #wildcard = false;
  #names: ReadonlySet<string> = new Set();
  #key = '';
  #legacyWildcard: boolean;

  constructor(readonly typeUrl: TypeUrl) {
    this.#legacyWildcard = FULL_STATE.has(typeUrl);
  }

  get wildcard(): boolean {
    return this.#wildcard;
  }

  /** Explicitly named resources, `*` excluded. */
  get names(): ReadonlySet<string> {
    return this.#names;
  }

  /** Identifies what the subscription selects: equal keys select the same resources. */
  get key(): string {
    return this.#key;
  }

  get empty(): boolean {
    return !this.#wildcard && this.#names.size === 0;
  }

  /** Replaces the subscription with a request's names (SotW sends the full list). Returns whether it changed. */
  update(resourceNames: readonly string[]): boolean {
    let wildcard: boolean;
    let names: Set<string>;
    if (resourceNames.length === 0) {
      wildcard = this.#legacyWildcard;
      names = new Set();
    } else {
      this.#legacyWildcard = false;
      names = new Set(resourceNames);
      wildcard = names.delete(WILDCARD) && FULL_STATE.has(this.typeUrl);
    }
    const changed = wildcard !== this.#wildcard || !sameNames(names, this.#names);
    this.#wildcard = wildcard;
    if (changed) {
      this.#names = names;
      this.#key = `${wildcard ? '*' : ''}\n${[...names].sort().join('\n')}`;
    }
    return changed;
  }
}

function sameNames(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const name of a) if (!b.has(name)) return false;
  return true;
}
