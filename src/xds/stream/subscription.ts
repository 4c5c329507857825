import { InternTable } from '../intern-table.js';
import { FULL_STATE, type TypeUrl } from '../type-urls.js';

const WILDCARD = '*';

const subscriptions = new InternTable<Subscription>();

/**
 * What a SotW client is subscribed to for one type on one stream, with the legacy wildcard
 * rule (xDS "How the client specifies what resources to return"): for Listener and Cluster,
 * an empty `resource_names` means `*` until the client has named any resource on the stream;
 * after that an empty list means nothing. `[]` → `[*, A]` → `[A]` → `[]` is: all, all plus A,
 * only A, nothing. A value: `update` returns the subscription after a request.
 */
export class Subscription {
  readonly #legacyWildcard: boolean;
  /** The names of the request it was made from, as sent; none before the first request. */
  readonly #requested: readonly string[] | undefined;
  /**
   * The last update made from this subscription, which streams share: in a storm every node's
   * first requests name the same resources from the same `none`, and each would otherwise sort,
   * join and look up the same names.
   */
  #lastUpdate: { readonly names: readonly string[]; readonly result: Subscription } | undefined;
  #view: { readonly wildcard: boolean; readonly names: readonly string[] } | undefined;

  private constructor(
    readonly typeUrl: TypeUrl,
    readonly wildcard: boolean,
    /** Explicitly named resources, `*` excluded. */
    readonly names: ReadonlySet<string>,
    /** Identifies what the subscription selects: equal keys select the same resources. */
    readonly key: string,
    legacyWildcard: boolean,
    requested: readonly string[] | undefined,
  ) {
    this.#legacyWildcard = legacyWildcard;
    this.#requested = requested;
  }

  /** Nothing requested yet on the stream. */
  static none(typeUrl: TypeUrl): Subscription {
    let none = Subscription.#none.get(typeUrl);
    if (none === undefined) {
      none = Subscription.#of(typeUrl, false, new Set(), '\n', FULL_STATE.has(typeUrl), undefined);
      Subscription.#none.set(typeUrl, none);
    }
    return none;
  }

  /** Every stream's first request of a type starts from this type's one `none`, kept, not looked up. */
  static readonly #none = new Map<TypeUrl, Subscription>();

  /**
   * The subscription with these fields: one object for every stream subscribed alike (a fleet's
   * nodes ask for the same clusters' endpoints), not one each with its own set of names.
   */
  static #of(typeUrl: TypeUrl, wildcard: boolean, names: ReadonlySet<string>, key: string, legacyWildcard: boolean, requested: readonly string[] | undefined): Subscription {
    const interned = `${typeUrl}\n${legacyWildcard ? 'legacy' : ''}\n${requested === undefined ? 'none' : ''}\n${key}`;
    return subscriptions.get(interned) ?? subscriptions.intern(interned, new Subscription(typeUrl, wildcard, names, key, legacyWildcard, requested));
  }

  /**
   * The subscription as a session view shows it, the names in order: sorted once, and one frozen
   * object for every view of every stream subscribed alike.
   */
  get view(): { readonly wildcard: boolean; readonly names: readonly string[] } {
    return (this.#view ??= Object.freeze({ wildcard: this.wildcard, names: Object.freeze([...this.names].sort()) }));
  }

  get empty(): boolean {
    return !this.wildcard && this.names.size === 0;
  }

  /** The subscription after a request with these names (SotW sends the full list); `this` when nothing changed. */
  update(resourceNames: readonly string[]): Subscription {
    // An update is idempotent, and an ACK repeats the names of the request before it, in the
    // same order: known without building a set (every node ACKs every change).
    if (this.#requested !== undefined && sameList(resourceNames, this.#requested)) return this;
    const last = this.#lastUpdate;
    if (last !== undefined && sameList(resourceNames, last.names)) return last.result;
    const result = this.#updated(resourceNames);
    this.#lastUpdate = { names: resourceNames, result };
    return result;
  }

  #updated(resourceNames: readonly string[]): Subscription {
    if (resourceNames.length === 0) {
      const wildcard = this.#legacyWildcard;
      if (wildcard === this.wildcard && this.names.size === 0) return this;
      return Subscription.#of(this.typeUrl, wildcard, new Set(), keyOf(wildcard, []), this.#legacyWildcard, resourceNames);
    }
    const names = new Set(resourceNames);
    const wildcard = names.delete(WILDCARD) && FULL_STATE.has(this.typeUrl);
    // Once a name was given, the legacy wildcard is gone for good on this stream.
    if (wildcard === this.wildcard && !this.#legacyWildcard && sameNames(names, this.names)) return this;
    return Subscription.#of(this.typeUrl, wildcard, names, keyOf(wildcard, [...names]), false, resourceNames);
  }
}

function keyOf(wildcard: boolean, names: readonly string[]): string {
  return `${wildcard ? '*' : ''}\n${[...names].sort().join('\n')}`;
}

function sameNames(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const name of a) if (!b.has(name)) return false;
  return true;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
