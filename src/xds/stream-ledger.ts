import type { EncodedResource } from './encode.js';
import { assertSealed, type Snapshot } from './snapshot.js';
import { selectResources } from './select-resources.js';
import { Subscription } from './subscription.js';
import { FULL_STATE, PUSH_ORDER, SHORT_NAME, type TypeUrl } from './type-urls.js';
import type { XdsRequest } from './xds-request.js';

/** One DiscoveryResponse to send: what the session decided, before encoding. */
export interface XdsResponse {
  readonly typeUrl: TypeUrl;
  readonly version: string;
  readonly nonce: string;
  readonly resources: readonly EncodedResource[];
}

/** How a request relates to what was sent on the stream. */
export type RequestOutcome =
  | { readonly kind: 'request' }
  | { readonly kind: 'ack'; readonly version: string; readonly nonce: string }
  | { readonly kind: 'nack'; readonly version: string; readonly nonce: string; readonly message: string }
  | { readonly kind: 'stale'; readonly nonce: string };

export interface Sent {
  readonly version: string;
  readonly nonce: string;
  readonly resources: readonly EncodedResource[];
  readonly at: number;
}

/** What a stream holds of one type, for reports (CSDS): the subscription, and what was sent, ACKed and NACKed. */
export interface TypeReport {
  readonly subscription: { readonly wildcard: boolean; readonly names: ReadonlySet<string> };
  readonly sent?: Sent;
  readonly acked?: { readonly version: string; readonly nonce: string; readonly at: number };
  readonly nacked?: { readonly version: string; readonly nonce: string; readonly message: string; readonly at: number };
}

interface TypeLedger extends TypeReport {
  readonly subscription: Subscription;
  /** The version the client said it held in its first request on this stream. */
  readonly heldVersion: string;
  /** The subscription changed since the last response: the next one is owed even at an unchanged version. */
  readonly resendOwed: boolean;
}

/**
 * Per stream and per type: the subscription, and what was sent, ACKed and NACKed. It decides
 * what a SotW response must carry and whether one is owed; the session machine decides when
 * to ask. A value: `receive` and `respond` return the ledger after the step, so the chart
 * assigns it and its actions stay pure. A new stream gets a new ledger: nonces are valid only
 * within a stream (xDS).
 */
export class StreamLedger {
  readonly #nonce: number;
  readonly #types: ReadonlyMap<TypeUrl, TypeLedger>;

  private constructor(
    readonly streamId: string,
    nonce: number,
    types: ReadonlyMap<TypeUrl, TypeLedger>,
  ) {
    this.#nonce = nonce;
    this.#types = types;
  }

  /** The ledger of a stream, before its first request. */
  static open(streamId: string): StreamLedger {
    return new StreamLedger(streamId, 0, new Map());
  }

  /** Records a request: subscription change, ACK or NACK. A stale nonce still updates the subscription (envoy#10363). */
  receive(request: XdsRequest & { readonly typeUrl: TypeUrl }, now: number): { ledger: StreamLedger; outcome: RequestOutcome } {
    const known = this.#types.get(request.typeUrl);
    const before = known ?? { subscription: Subscription.none(request.typeUrl), heldVersion: request.versionInfo, resendOwed: false };
    const subscription = before.subscription.update(request.resourceNames);
    // Before anything is sent the first response is owed anyway; owing a re-send from the
    // start would also send a reconnecting client the wildcard version it says it holds.
    const resendOwed = before.resendOwed || (subscription.key !== before.subscription.key && before.sent !== undefined);
    const type: TypeLedger = { ...before, subscription, resendOwed };
    const nonce = request.responseNonce;
    const { sent } = type;
    if (nonce !== '' && sent && nonce !== sent.nonce) return { ledger: this.#with(request.typeUrl, type), outcome: { kind: 'stale', nonce } };
    if (nonce === '' || !sent) return { ledger: this.#with(request.typeUrl, type), outcome: { kind: 'request' } };
    if (request.errorDetail) {
      // The rejected version is the one sent with this nonce; version_info is the client's last good one.
      const { message } = request.errorDetail;
      const nacked = { version: sent.version, nonce, message, at: now };
      return { ledger: this.#with(request.typeUrl, { ...type, nacked }), outcome: { kind: 'nack', version: sent.version, nonce, message } };
    }
    const acked = { version: request.versionInfo, nonce, at: now };
    return { ledger: this.#with(request.typeUrl, { ...type, acked }), outcome: { kind: 'ack', version: request.versionInfo, nonce } };
  }

  /**
   * The response owed for a type from this snapshot, and the ledger with it recorded as sent;
   * no response when none is owed. `force` re-sends an unchanged version: EDS after a CDS
   * change, so clusters finish warming (I5).
   */
  respond(typeUrl: TypeUrl, snapshot: Snapshot, now: number, force = false): { ledger: StreamLedger; response?: XdsResponse } {
    const type = this.#types.get(typeUrl);
    if (!type) return { ledger: this };
    // I1 at run time too: only a snapshot the generator sealed reaches the wire.
    assertSealed(snapshot);
    const { subscription } = type;
    const { resources, version } = selectResources(subscription, snapshot.types[typeUrl]);
    if (resources.length === 0) {
      // EDS and RDS: an empty response is a no-op. LDS and CDS: it deletes everything the client
      // holds, so it is sent only to a wildcard subscriber (the node's configuration really has
      // none) or to remove what this stream was sent before. A named resource that does not
      // exist yet is sent when it appears.
      if (!FULL_STATE.has(typeUrl) || subscription.empty) return { ledger: this };
      if (!subscription.wildcard && !type.sent?.resources.length) return { ledger: this };
    }
    if (!force && !type.resendOwed) {
      if (type.sent?.version === version) return { ledger: this };
      // A reconnecting client already holds this wildcard LDS/CDS version (xDS: safe to skip).
      // An empty version_info holds nothing, even when what is owed is an empty set.
      const held = type.heldVersion !== '' && type.heldVersion === version;
      if (!type.sent && subscription.wildcard && subscription.names.size === 0 && held) {
        return { ledger: this.#with(typeUrl, { ...type, sent: { version, nonce: '', resources, at: now } }) };
      }
    }
    const nonce = String(this.#nonce + 1);
    const next = new StreamLedger(this.streamId, this.#nonce + 1, withType(this.#types, typeUrl, { ...type, sent: { version, nonce, resources, at: now }, resendOwed: false }));
    return { ledger: next, response: { typeUrl, version, nonce, resources } };
  }

  /** Types the client has asked for on this stream, in push order (I5). */
  requestedTypes(): readonly TypeUrl[] {
    return PUSH_ORDER.filter((typeUrl) => this.#types.has(typeUrl));
  }

  /** Whether the stream's first request said the client holds configuration (a version it was sent before). */
  holdsConfiguration(): boolean {
    for (const type of this.#types.values()) if (type.heldVersion !== '') return true;
    return false;
  }

  report(typeUrl: TypeUrl): TypeReport | undefined {
    return this.#types.get(typeUrl);
  }

  lastSent(typeUrl: TypeUrl): Sent | undefined {
    return this.#types.get(typeUrl)?.sent;
  }

  /** Whether the last response of some type was NACKed: `status()`'s answer, without building it. */
  nacking(): boolean {
    for (const type of this.#types.values()) {
      if (type.sent !== undefined && type.nacked?.nonce === type.sent.nonce) return true;
    }
    return false;
  }

  /** Per-type status for inspection, keyed by short name. */
  status(): Record<string, TypeStatus> {
    const out: Record<string, TypeStatus> = {};
    for (const [typeUrl, type] of this.#types) {
      const iso = (at: number) => new Date(at).toISOString();
      out[SHORT_NAME[typeUrl]] = {
        typeUrl,
        subscription: { wildcard: type.subscription.wildcard, names: [...type.subscription.names].sort() },
        ...(type.sent && {
          sent: { version: type.sent.version, nonce: type.sent.nonce, resources: type.sent.resources.length, at: iso(type.sent.at) },
        }),
        ...(type.acked && { acked: { version: type.acked.version, nonce: type.acked.nonce, at: iso(type.acked.at) } }),
        ...(type.nacked && {
          nacked: { version: type.nacked.version, nonce: type.nacked.nonce, message: type.nacked.message, at: iso(type.nacked.at) },
        }),
      };
    }
    return out;
  }

  #with(typeUrl: TypeUrl, type: TypeLedger): StreamLedger {
    return new StreamLedger(this.streamId, this.#nonce, withType(this.#types, typeUrl, type));
  }
}

function withType(types: ReadonlyMap<TypeUrl, TypeLedger>, typeUrl: TypeUrl, type: TypeLedger): ReadonlyMap<TypeUrl, TypeLedger> {
  const next = new Map(types);
  next.set(typeUrl, type);
  return next;
}

/** A type's status on a stream, as the API shows it. */
export interface TypeStatus {
  readonly typeUrl: string;
  readonly subscription: { readonly wildcard: boolean; readonly names: readonly string[] };
  readonly sent?: { readonly version: string; readonly nonce: string; readonly resources: number; readonly at: string };
  readonly acked?: { readonly version: string; readonly nonce: string; readonly at: string };
  readonly nacked?: { readonly version: string; readonly nonce: string; readonly message: string; readonly at: string };
}
