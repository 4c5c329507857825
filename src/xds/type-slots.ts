import { PUSH_ORDER, type TypeUrl } from './type-urls.js';

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
