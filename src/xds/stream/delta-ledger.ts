import { isoTime } from '../../common/index.js';
import type { EncodedResource } from '../encode.js';
import { assertSealed, type Snapshot, type TypeSnapshot } from '../snapshot.js';
import { FULL_STATE, PUSH_ORDER, SHORT_NAME, type TypeUrl } from '../type-urls.js';
import type { Ledger, RequestOutcome, TypeReport, TypeStatus, XdsResponse } from './ledger.js';
import { requestKind } from './request-kind.js';
import type { DeltaRequest, TypedRequest } from './stream-request.js';
import { allAcked, lastNacked, NO_TYPES, slotOf, typesIn, withType, type TypeSlots } from './type-slots.js';

const WILDCARD = '*';

/**
 * What the node holds of one resource: the resource itself once this stream knows it (its
 * version is the resource's), else the version the node said it holds. No wrapper: a node holds
 * every resource of its configuration, and 10,000 nodes hold a wrapper each otherwise.
 */
type Held = EncodedResource | string;

const heldVersion = (held: Held): string => (typeof held === 'string' ? held : held.version);

/** The empty set of names every type without any shares: a type's sets are replaced, never changed. */
const NONE: ReadonlySet<string> = new Set();

/** `names`, or the shared empty set when it has none. */
const orNone = (names: ReadonlySet<string>): ReadonlySet<string> => (names.size === 0 ? NONE : names);

/**
 * The last value of each type a step made, handed out again for an equal one: a storm or a change
 * makes the same held map and the same subscribed names for node after node (10,000 nodes sent
 * the same clusters hold one map, and one view of it). Safe because maps and sets are replaced,
 * never changed, once a type holds them.
 */
class LastOfEachType<T extends { readonly size: number }> {
  readonly #last = new Map<TypeUrl, T>();
  readonly #same: (last: T, value: T) => boolean;

  constructor(same: (last: T, value: T) => boolean) {
    this.#same = same;
  }

  share(typeUrl: TypeUrl, value: T): T {
    const last = this.#last.get(typeUrl);
    if (last !== undefined && last.size === value.size && this.#same(last, value)) return last;
    this.#last.set(typeUrl, value);
    return value;
  }
}

const sharedHeld = new LastOfEachType<ReadonlyMap<string, Held>>((last, held) => {
  for (const [name, holds] of held) if (last.get(name) !== holds) return false;
  return true;
});

const sharedNames = new LastOfEachType<ReadonlySet<string>>((last, names) => {
  for (const name of names) if (!last.has(name)) return false;
  return true;
});

interface DeltaType {
  /** Subscribed to `*`, explicitly or by the legacy rule. */
  readonly wildcard: boolean;
  /** The wildcard came from the legacy rule (a first request with both lists empty): any name subscribed ends it. */
  readonly legacy: boolean;
  /** Names subscribed explicitly, `*` excluded. */
  readonly names: ReadonlySet<string>;
  /** What the node holds, by name: from `initial_resource_versions`, then from what was sent and removed. */
  readonly held: ReadonlyMap<string, Held>;
  /** Names to send even if the node holds them at the current version: just subscribed, or unsubscribed while `*` covers them. */
  readonly owed: ReadonlySet<string>;
  /** `*` was just subscribed: everything it covers is sent, held or not (go-control-plane#1450). */
  readonly owedAll: boolean;
  /** Subscribed names the node was told do not exist (`removed_resources`), until they appear or are subscribed again. */
  readonly absent: ReadonlySet<string>;
  /** A response of the type was sent on this stream: the first wildcard request is answered even when nothing exists. */
  readonly answered: boolean;
  /**
   * The type's resources this ledger last answered from, while nothing owed has changed since:
   * answering from them again sends nothing (an ACK is answered at no cost). A subscription
   * change clears it.
   */
  readonly settledWith: TypeSnapshot | undefined;
  readonly sent: { readonly version: string; readonly nonce: string; readonly resources: number; readonly at: number } | undefined;
  readonly acked: { readonly version: string; readonly nonce: string; readonly at: number } | undefined;
  readonly nacked: { readonly version: string; readonly nonce: string; readonly message: string; readonly at: number } | undefined;
}

/**
 * A type before its first request. Every type record is a copy of it with some fields changed,
 * so all of them have its fields in its order: one shape, which keeps every read of a type's
 * fields monomorphic (records built by spreads of differing sources had a shape each). Its empty
 * map and sets are shared like any other: they are replaced, never changed.
 */
const UNSUBSCRIBED: DeltaType = {
  wildcard: false,
  legacy: false,
  names: NONE,
  held: new Map(),
  owed: NONE,
  owedAll: false,
  absent: NONE,
  answered: false,
  settledWith: undefined,
  sent: undefined,
  acked: undefined,
  nacked: undefined,
};

/**
 * The Delta ledger (incremental xDS): per type, what the client subscribed to and what it
 * holds, resource by resource, so a response carries only what changed for this node and
 * removes only what it holds or asked for (reference/delta-xds.md, rules 1–8). Versions are the
 * resources' content hashes (I6), so what a node names in `initial_resource_versions` is
 * compared with what any instance generates. A value, as the SotW ledger.
 */
export class DeltaLedger implements Ledger {
  readonly protocol = 'delta';
  readonly #nonce: number;
  readonly #types: TypeSlots<DeltaType>;

  private constructor(
    readonly streamId: string,
    nonce: number,
    types: TypeSlots<DeltaType>,
  ) {
    this.#nonce = nonce;
    this.#types = types;
  }

  static open(streamId: string): DeltaLedger {
    return new DeltaLedger(streamId, 0, NO_TYPES);
  }

  receive(stream: TypedRequest, now: number): { ledger: DeltaLedger; outcome: RequestOutcome } {
    const request = deltaRequest(stream);
    const kind = requestKind(request);
    const { typeUrl } = request;
    const type = subscribed(this.#types[slotOf(typeUrl)], request);
    // Rule 1: the nonce only matches an ACK or NACK to a response; a request is never dropped for it.
    const { sent } = type;
    const nonce = request.responseNonce;
    if (kind === 'request' || sent === undefined || nonce !== sent.nonce) return { ledger: this.#with(typeUrl, type), outcome: { kind: 'request' } };
    if (kind === 'nack') {
      // Rule 2: a NACK is `error_detail`, nothing else. The refused resources stay recorded as
      // sent, so they are not sent again until they change (no NACK loop).
      const { message } = request.errorDetail!;
      const nacked = { version: sent.version, nonce, message, at: now };
      return { ledger: this.#with(typeUrl, { ...type, nacked }), outcome: { kind: 'nack', version: sent.version, nonce, message } };
    }
    const acked = { version: sent.version, nonce, at: now };
    return { ledger: this.#with(typeUrl, { ...type, acked }), outcome: { kind: 'ack', version: sent.version, nonce } };
  }

  respond(typeUrl: TypeUrl, snapshot: Snapshot, now: number, resend?: ReadonlySet<string>): { ledger: DeltaLedger; response?: XdsResponse } {
    const type = this.#types[slotOf(typeUrl)];
    if (type === undefined) return { ledger: this };
    // I1 at run time too: only a snapshot the generator sealed reaches the wire.
    assertSealed(snapshot);
    const available = snapshot.types[typeUrl];
    if (type.settledWith === available && !resend?.size) return { ledger: this };
    // What the node holds and was told is absent are copied only once something in them changes:
    // a change moves one resource of ten, and an ACK's answer moves none.
    let held: Map<string, Held> | undefined;
    let absent: Set<string> | undefined;
    const wantedNow: EncodedResource[] = type.wildcard ? [...available.wildcard.list] : [];
    for (const name of type.names) {
      if (type.wildcard && available.wildcard.get(name)) continue;
      const found = available.get(name);
      if (found !== undefined) wantedNow.push(found);
    }
    const resources: EncodedResource[] = [];
    for (const resource of wantedNow) {
      const { name } = resource;
      const holds = type.held.get(name);
      if (holds === undefined || heldVersion(holds) !== resource.version || type.owedAll || type.owed.has(name) || resend?.has(name)) resources.push(resource);
      else if (holds !== resource) (held ??= new Map(type.held)).set(name, resource);
    }
    const removed: string[] = [];
    for (const name of type.held.keys()) {
      // Rule 7: the node drops only what it is told to; a name it holds that it no longer gets is removed.
      if (wanted(type, available, name) || !(type.wildcard || type.names.has(name) || type.owed.has(name))) continue;
      removed.push(name);
      if (type.names.has(name)) (absent ??= new Set(type.absent)).add(name);
    }
    for (const name of type.names) {
      // Rule 8: a name asked for that does not exist is said so at once, and stays subscribed.
      if (!wanted(type, available, name) && !type.held.has(name) && !(absent ?? type.absent).has(name)) {
        removed.push(name);
        (absent ??= new Set(type.absent)).add(name);
      }
    }
    // Names told absent that exist now are absent no more; the names just added are not wanted.
    for (const name of type.absent) if (wanted(type, available, name)) (absent ??= new Set(type.absent)).delete(name);
    const first = !type.answered && type.wildcard;
    if (resources.length === 0 && removed.length === 0 && !first) {
      // Nothing owed; what the node holds at the current version is now known by its bytes.
      return { ledger: this.#with(typeUrl, { ...type, held: held === undefined ? type.held : sharedHeld.share(typeUrl, held), owed: NONE, owedAll: false, absent: orNone(absent ?? type.absent), settledWith: available }) };
    }
    held ??= new Map(type.held);
    for (const resource of resources) held.set(resource.name, resource);
    for (const name of removed) held.delete(name);
    const nonce = String(this.#nonce + 1);
    const sorted = resources.sort(byName);
    const next: DeltaType = {
      ...type,
      held: sharedHeld.share(typeUrl, held),
      owed: NONE,
      owedAll: false,
      absent: orNone(absent ?? type.absent),
      answered: true,
      settledWith: available,
      sent: { version: available.version, nonce, resources: sorted.length, at: now },
    };
    return {
      ledger: new DeltaLedger(this.streamId, this.#nonce + 1, withType(this.#types, typeUrl, next)),
      response: { protocol: 'delta', typeUrl, version: available.version, nonce, resources: sorted, removed: removed.sort() },
    };
  }

  requestedTypes(): readonly TypeUrl[] {
    return typesIn(this.#types);
  }

  holdsConfiguration(): boolean {
    for (const type of this.#types) if (type !== undefined && type.held.size > 0) return true;
    return false;
  }

  nacking(): boolean {
    return lastNacked(this.#types);
  }

  acknowledged(): boolean {
    return allAcked(this.#types);
  }

  status(): Record<string, TypeStatus> {
    const out: Record<string, TypeStatus> = {};
    for (const [slot, type] of this.#types.entries()) {
      if (type === undefined) continue;
      const typeUrl = PUSH_ORDER[slot]!;
      out[SHORT_NAME[typeUrl]] = {
        typeUrl,
        subscription: { wildcard: type.wildcard, names: sortedNames(type.names) },
        ...(type.sent && { sent: { version: type.sent.version, nonce: type.sent.nonce, resources: type.sent.resources, at: isoTime(type.sent.at) } }),
        ...(type.acked && { acked: { version: type.acked.version, nonce: type.acked.nonce, at: isoTime(type.acked.at) } }),
        ...(type.nacked && { nacked: { version: type.nacked.version, nonce: type.nacked.nonce, message: type.nacked.message, at: isoTime(type.nacked.at) } }),
        held: heldView(type.held),
      };
    }
    return out;
  }

  report(typeUrl: TypeUrl): TypeReport | undefined {
    const type = this.#types[slotOf(typeUrl)];
    if (type === undefined) return undefined;
    const resources = [...type.held.values()].flatMap((holds) => (typeof holds === 'string' ? [] : [holds])).sort(byName);
    return {
      subscription: { wildcard: type.wildcard, names: type.names },
      ...(type.sent && { sent: { version: type.sent.version, nonce: type.sent.nonce, resources, at: type.sent.at } }),
      ...(type.acked && { acked: type.acked }),
      ...(type.nacked && { nacked: type.nacked }),
      perResourceVersions: true,
    };
  }

  #with(typeUrl: TypeUrl, type: DeltaType): DeltaLedger {
    return new DeltaLedger(this.streamId, this.#nonce, withType(this.#types, typeUrl, type));
  }
}

/** A type's subscription after a request (rules 3–6). */
function subscribed(known: DeltaType | undefined, request: DeltaRequest & { readonly typeUrl: TypeUrl }): DeltaType {
  const first = known === undefined;
  const { subscribe, unsubscribe } = request;
  // An ACK, a NACK or a bare request on a known type changes no subscription.
  if (!first && subscribe.length === 0 && unsubscribe.length === 0) return known;
  const type = known ?? UNSUBSCRIBED;
  const wildcardType = FULL_STATE.has(request.typeUrl);
  // Rule 6: what the client holds from an earlier stream comes with its first request of the type.
  const initial = Object.keys(request.initialVersions).length > 0;
  // The sets and the map are copied once one of them changes: most requests change one or none.
  let held: Map<string, Held> | undefined = first && initial ? new Map(Object.entries(request.initialVersions)) : undefined;
  let names: Set<string> | undefined;
  let owed: Set<string> | undefined;
  let absent: Set<string> | undefined;
  let { wildcard, owedAll } = type;
  // Rule 5: a first request with both lists empty is the legacy wildcard, for the types that have one.
  let legacy = first ? wildcardType && subscribe.length === 0 && unsubscribe.length === 0 : type.legacy;
  if (first && legacy) wildcard = true;
  for (const name of subscribe) {
    if (name === WILDCARD) {
      wildcard = wildcardType;
      // On a new stream, `*` names what the node wants: what it holds at the current version stays (rule 6).
      owedAll = wildcardType && !first;
      legacy = false;
      continue;
    }
    // Rule 3: a name subscribed is sent even if the server thinks the client has it, unless
    // the client says itself, as a new stream begins, at which version it holds it (rule 6).
    (names ??= new Set(type.names)).add(name);
    if (!(first && name in request.initialVersions)) (owed ??= new Set(type.owed)).add(name);
    if (type.absent.has(name)) (absent ??= new Set(type.absent)).delete(name);
    // Once a name is subscribed, the legacy wildcard is gone for good. What only it covered the
    // client no longer asks for: as with an unsubscribe, it drops it itself, no answer owed.
    if (legacy) {
      legacy = false;
      wildcard = false;
      held ??= new Map(type.held);
      for (const heldName of [...held.keys()]) if (heldName !== name && !names.has(heldName)) held.delete(heldName);
    }
  }
  for (const name of unsubscribe) {
    if (name === WILDCARD) {
      wildcard = false;
      legacy = false;
      continue;
    }
    // Rule 4: unsubscribing needs no answer, unless `*` still covers the name: then it is sent or removed.
    (names ??= new Set(type.names)).delete(name);
    if (type.absent.has(name)) (absent ??= new Set(type.absent)).delete(name);
    if (wildcard) (owed ??= new Set(type.owed)).add(name);
    else {
      (owed ??= new Set(type.owed)).delete(name);
      (held ??= new Map(type.held)).delete(name);
    }
  }
  return {
    ...type,
    wildcard,
    legacy,
    names: names === undefined ? type.names : sharedNames.share(request.typeUrl, orNone(names)),
    held: held ?? type.held,
    owed: owed === undefined ? type.owed : orNone(owed),
    owedAll,
    absent: absent === undefined ? type.absent : orNone(absent),
    settledWith: undefined,
  };
}

/** Whether the subscription asks for `name` and it exists now. */
function wanted(type: DeltaType, available: TypeSnapshot, name: string): boolean {
  if (type.wildcard && available.wildcard.get(name)) return true;
  return type.names.has(name) && available.get(name) !== undefined;
}

/**
 * What a node holds, as views show it: sorted by name, built once per held map (maps are
 * replaced, never changed) and shared by the views made from it, so frozen. Session records
 * build a view of every node that moved each second.
 */
const heldViews = new WeakMap<ReadonlyMap<string, Held>, Readonly<Record<string, string>>>();

function heldView(held: ReadonlyMap<string, Held>): Readonly<Record<string, string>> {
  let view = heldViews.get(held);
  if (view === undefined) {
    view = Object.freeze(Object.fromEntries([...held].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, holds]) => [name, heldVersion(holds)])));
    heldViews.set(held, view);
  }
  return view;
}

/** A name set in order, as views show it: sorted once per set (sets are replaced, never changed, and shared by nodes subscribed alike). */
const sortedSets = new WeakMap<ReadonlySet<string>, readonly string[]>();

function sortedNames(names: ReadonlySet<string>): readonly string[] {
  let sorted = sortedSets.get(names);
  if (sorted === undefined) {
    sorted = Object.freeze([...names].sort());
    sortedSets.set(names, sorted);
  }
  return sorted;
}

function byName(a: EncodedResource, b: EncodedResource): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function deltaRequest(request: TypedRequest): DeltaRequest & { readonly typeUrl: TypeUrl } {
  if (request.protocol !== 'delta') throw new Error(`a ${request.protocol} request reached a Delta ledger`);
  return request;
}
