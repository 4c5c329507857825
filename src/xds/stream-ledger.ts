import type { EncodedResource } from './encode.js';
import type { Snapshot } from './snapshot.js';
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

interface Sent {
  readonly version: string;
  readonly nonce: string;
  readonly resources: readonly EncodedResource[];
  readonly at: number;
}

interface TypeLedger {
  readonly subscription: Subscription;
  /** The version the client said it held in its first request on this stream. */
  readonly heldVersion: string;
  /** The subscription changed since the last response: the next one is owed even at an unchanged version. */
  resendOwed: boolean;
  sent?: Sent;
  acked?: { readonly version: string; readonly nonce: string; readonly at: number };
  nacked?: { readonly version: string; readonly nonce: string; readonly message: string; readonly at: number };
}

/**
 * Per stream and per type: the subscription, and what was sent, ACKed and NACKed. It decides
 * what a SotW response must carry and whether one is owed; the session machine decides when
 * to ask. A new stream gets a new ledger: nonces are valid only within a stream (xDS).
 */
export class StreamLedger {
  #nonce = 0;
  readonly #types = new Map<TypeUrl, TypeLedger>();

  constructor(readonly streamId: string) {}

  /** Records a request: subscription change, ACK or NACK. A stale nonce still updates the subscription (envoy#10363). */
  receive(request: XdsRequest & { readonly typeUrl: TypeUrl }, now: number): RequestOutcome {
    let type = this.#types.get(request.typeUrl);
    if (!type) {
      type = { subscription: new Subscription(request.typeUrl), heldVersion: request.versionInfo, resendOwed: false };
      this.#types.set(request.typeUrl, type);
    }
    // Before anything is sent the first response is owed anyway; owing a re-send from the
    // start would also send a reconnecting client the wildcard version it says it holds.
    if (type.subscription.update(request.resourceNames) && type.sent) type.resendOwed = true;
    const nonce = request.responseNonce;
    if (nonce !== '' && type.sent && nonce !== type.sent.nonce) return { kind: 'stale', nonce };
    if (nonce === '' || !type.sent) return { kind: 'request' };
    if (request.errorDetail) {
      // The rejected version is the one sent with this nonce; version_info is the client's last good one.
      type.nacked = { version: type.sent.version, nonce, message: request.errorDetail.message, at: now };
      return { kind: 'nack', version: type.sent.version, nonce, message: request.errorDetail.message };
    }
    type.acked = { version: request.versionInfo, nonce, at: now };
    return { kind: 'ack', version: request.versionInfo, nonce };
  }

  /**
   * The response owed for a type from this snapshot, recorded as sent; undefined when none is.
   * `force` re-sends an unchanged version: EDS after a CDS change, so clusters finish warming (I5).
   */
  respond(typeUrl: TypeUrl, snapshot: Snapshot, now: number, force = false): XdsResponse | undefined {
    const type = this.#types.get(typeUrl);
    if (!type) return undefined;
    const { subscription } = type;
    const { resources, version } = selectResources(subscription, snapshot.types[typeUrl]);
    if (resources.length === 0) {
      // EDS and RDS: an empty response is a no-op. LDS and CDS: it deletes everything the client
      // holds, so it is sent only to a wildcard subscriber (the node's configuration really has
      // none) or to remove what this stream was sent before. A named resource that does not
      // exist yet is sent when it appears.
      if (!FULL_STATE.has(typeUrl) || subscription.empty) return undefined;
      if (!subscription.wildcard && !type.sent?.resources.length) return undefined;
    }
    if (!force && !type.resendOwed) {
      if (type.sent?.version === version) return undefined;
      // A reconnecting client already holds this wildcard LDS/CDS version (xDS: safe to skip).
      // An empty version_info holds nothing, even when what is owed is an empty set.
      const held = type.heldVersion !== '' && type.heldVersion === version;
      if (!type.sent && subscription.wildcard && subscription.names.size === 0 && held) {
        type.sent = { version, nonce: '', resources, at: now };
        return undefined;
      }
    }
    const nonce = String(++this.#nonce);
    type.sent = { version, nonce, resources, at: now };
    type.resendOwed = false;
    return { typeUrl, version, nonce, resources };
  }

  /** Types the client has asked for on this stream, in push order (I5). */
  requestedTypes(): readonly TypeUrl[] {
    return PUSH_ORDER.filter((typeUrl) => this.#types.has(typeUrl));
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
}

/** A type's status on a stream, as the API shows it. */
export interface TypeStatus {
  readonly typeUrl: string;
  readonly subscription: { readonly wildcard: boolean; readonly names: readonly string[] };
  readonly sent?: { readonly version: string; readonly nonce: string; readonly resources: number; readonly at: string };
  readonly acked?: { readonly version: string; readonly nonce: string; readonly at: string };
  readonly nacked?: { readonly version: string; readonly nonce: string; readonly message: string; readonly at: string };
}
