import { PUSH_ORDER, type TypeUrl } from '../type-urls.js';

/**
 * A ledger's record of each type at its place in PUSH_ORDER, undefined until the client asks for
 * the type: four slots copied as the ledger moves, where a Map of three entries was more than
 * twice the size (every node's ledger is replaced at every change, and the collector copies
 * what replaces it).
 */
export type TypeSlots<T> = readonly (T | undefined)[];

// Not frozen: a frozen array's `slice` takes V8's slow path (15 times a plain one's), and every stream's first request slices it.
export const NO_TYPES: TypeSlots<never> = PUSH_ORDER.map(() => undefined);

export const slotOf = (typeUrl: TypeUrl): number => PUSH_ORDER.indexOf(typeUrl);

export function withType<T>(types: TypeSlots<T>, typeUrl: TypeUrl, type: T): TypeSlots<T> {
  const next = types.slice();
  next[slotOf(typeUrl)] = type;
  return next;
}

/** The types that have a record, in push order: those the client has asked for. */
export function typesIn(types: TypeSlots<unknown>): readonly TypeUrl[] {
  return PUSH_ORDER.filter((_, slot) => types[slot] !== undefined);
}

/** What both ledgers record of a type's exchanges, for `lastNacked` and `allAcked`. */
interface Exchanged {
  readonly sent?: { readonly nonce: string } | undefined;
  readonly acked?: { readonly nonce: string } | undefined;
  readonly nacked?: { readonly nonce: string } | undefined;
}

/** Whether the last response of some type was NACKed. */
export function lastNacked(types: TypeSlots<Exchanged>): boolean {
  for (const type of types) if (type?.sent !== undefined && type.nacked?.nonce === type.sent.nonce) return true;
  return false;
}

/** Whether the last response of every type was ACKed: the client holds what it was sent. */
export function allAcked(types: TypeSlots<Exchanged>): boolean {
  for (const type of types) if (type?.sent !== undefined && type.acked?.nonce !== type.sent.nonce) return false;
  return true;
}
