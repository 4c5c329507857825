import { isoTime } from '../iso-time.js';
import type { TypeStatus } from './ledger.js';
import type { TypeSlots } from './type-slots.js';
import { PUSH_ORDER, SHORT_NAME, type TypeUrl } from './type-urls.js';

/** What a ledger's type record holds of the responses sent on its stream and their answers; times are epoch ms. */
interface Exchanged {
  readonly sent?: { readonly version: string; readonly nonce: string; readonly at: number } | undefined;
  readonly acked?: { readonly version: string; readonly nonce: string; readonly at: number } | undefined;
  readonly nacked?: { readonly version: string; readonly nonce: string; readonly message: string; readonly at: number } | undefined;
}

const statuses = new WeakMap<object, TypeStatus>();

/**
 * Each type's status for inspection, keyed by short name. A status is made once per type record
 * (records are replaced, never changed) and shared by every view made from it, so frozen: the
 * session records build a view of every node that moved each second, and a change moves one
 * type of three.
 */
export function statusOf<T extends object>(types: TypeSlots<T>, build: (typeUrl: TypeUrl, type: T) => TypeStatus): Record<string, TypeStatus> {
  const out: Record<string, TypeStatus> = {};
  for (const [slot, type] of types.entries()) {
    if (type === undefined) continue;
    const typeUrl = PUSH_ORDER[slot]!;
    let status = statuses.get(type);
    if (status === undefined) {
      status = Object.freeze(build(typeUrl, type));
      statuses.set(type, status);
    }
    out[SHORT_NAME[typeUrl]] = status;
  }
  return out;
}

/** The last response sent (carrying `resources`), ACKed and NACKed, as a status shows them. */
export function exchangeView({ sent, acked, nacked }: Exchanged, resources: number): Pick<TypeStatus, 'sent' | 'acked' | 'nacked'> {
  return {
    ...(sent && { sent: Object.freeze({ version: sent.version, nonce: sent.nonce, resources, at: isoTime(sent.at) }) }),
    ...(acked && { acked: Object.freeze({ version: acked.version, nonce: acked.nonce, at: isoTime(acked.at) }) }),
    ...(nacked && { nacked: Object.freeze({ version: nacked.version, nonce: nacked.nonce, message: nacked.message, at: isoTime(nacked.at) }) }),
  };
}
