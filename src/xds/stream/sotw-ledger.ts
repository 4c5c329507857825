import { isoTime, memoisedPair, type PairMemo } from '../../common/index.js';
import { assertSealed, type Snapshot } from '../snapshot.js';
import { FULL_STATE, PUSH_ORDER, SHORT_NAME, type TypeUrl } from '../type-urls.js';
import type { EncodedResource } from '../encode.js';
import type { Ledger, RequestOutcome, TypeReport, TypeStatus, XdsResponse } from './ledger.js';
import { requestKind } from './request-kind.js';
import { selectResources } from './select-resources.js';
import { Subscription } from './subscription.js';
import { allAcked, lastNacked, NO_TYPES, slotOf, typesIn, withType, type TypeSlots } from './type-slots.js';
import type { TypedRequest, XdsRequest } from './stream-request.js';

interface TypeLedger extends Omit<TypeReport, 'perResourceVersions'> {
  readonly subscription: Subscription;
  /** The version the client said it held in its first request on this stream. */
  readonly heldVersion: string;
  /** The subscription changed since the last response: the next one is owed even at an unchanged version. */
  readonly resendOwed: boolean;
}

/**
 * A type's record with every field present, in one order: 10,000 streams' records share one
 * shape, so reading them stays fast (a record built by spreads takes a shape per set of fields).
 */
function typeLedger(type: TypeLedger): TypeLedger {
  const { subscription, heldVersion, resendOwed, sent, acked, nacked } = type;
  return { subscription, heldVersion, resendOwed, sent, acked, nacked };
}

/**
 * What a response of `typeUrl` carries of `resources`, everything the subscription selects now.
 * LDS and CDS: all of them, a response being the whole set the client holds. EDS, RDS and SDS
 * (xDS: not full-state, a resource a response leaves out is kept): once the client ACKed the
 * last response, only those that differ from what it holds, so one endpoint more is one
 * ClusterLoadAssignment on the wire, not every one the node uses; all of them otherwise, and
 * when none differs (the version moved for a resource dropped from the selection).
 */
function changedSinceAcked(typeUrl: TypeUrl, type: TypeLedger, resources: readonly EncodedResource[]): readonly EncodedResource[] {
  const { sent, acked } = type;
  if (FULL_STATE.has(typeUrl) || sent === undefined || acked?.nonce !== sent.nonce) return resources;
  return memoisedPair(lastChanges, sent.resources, resources, () => {
    const held = new Map(sent.resources.map((resource) => [resource.name, resource.version]));
    const found = resources.filter((resource) => held.get(resource.name) !== resource.version);
    return found.length > 0 ? Object.freeze(found) : resources;
  });
}

/**
 * Per list of resources sent, the changes last found from it to a newer list. Nodes subscribed
 * alike hold the same lists (`selectResources` shares them), so after a change 10,000 nodes ask
 * the same question: answered once, not with a map and a list per node (4 KB a node a change).
 */
const lastChanges: PairMemo<readonly EncodedResource[], readonly EncodedResource[], readonly EncodedResource[]> = new WeakMap();

/**
 * The SotW ledger: per type, the subscription (with the legacy wildcard rule) and the last
 * response sent, ACKed and NACKed. A SotW response makes the client hold every resource the
 * subscription selects (`sent` records them all; an EDS, RDS or SDS response carries only those
 * that changed, `changedSinceAcked`); a value, `receive` and `respond` return the ledger after
 * the step.
 */
export class SotwLedger implements Ledger {
  readonly protocol = 'sotw';
  readonly #nonce: number;
  readonly #types: TypeSlots<TypeLedger>;

  private constructor(
    readonly streamId: string,
    nonce: number,
    types: TypeSlots<TypeLedger>,
  ) {
    this.#nonce = nonce;
    this.#types = types;
  }

  /** The ledger of a stream, before its first request. */
  static open(streamId: string): SotwLedger {
    return new SotwLedger(streamId, 0, NO_TYPES);
  }

  /** Records a request: subscription change, ACK or NACK. A stale nonce still updates the subscription (envoy#10363). */
  receive(stream: TypedRequest, now: number): { ledger: SotwLedger; outcome: RequestOutcome } {
    const request = sotwRequest(stream);
    const kind = requestKind(request);
    const before = this.#types[slotOf(request.typeUrl)] ?? typeLedger({ subscription: Subscription.none(request.typeUrl), heldVersion: request.versionInfo, resendOwed: false });
    const subscription = before.subscription.update(request.resourceNames);
    // Before anything is sent the first response is owed anyway; owing a re-send from the
    // start would also send a reconnecting client the wildcard version it says it holds.
    const resendOwed = before.resendOwed || (subscription.key !== before.subscription.key && before.sent !== undefined);
    const nonce = request.responseNonce;
    const { sent } = before;
    const type: TypeLedger = { ...before, subscription, resendOwed };
    if (kind === 'request' || !sent) return { ledger: this.#with(request.typeUrl, type), outcome: { kind: 'request' } };
    if (nonce !== sent.nonce) return { ledger: this.#with(request.typeUrl, type), outcome: { kind: 'stale', nonce } };
    if (kind === 'nack') {
      // The rejected version is the one sent with this nonce; version_info is the client's last good one.
      const { message } = request.errorDetail!;
      const nacked = { version: sent.version, nonce, message, at: now };
      return { ledger: this.#with(request.typeUrl, { ...type, nacked }), outcome: { kind: 'nack', version: sent.version, nonce, message } };
    }
    const acked = { version: request.versionInfo, nonce, at: now };
    return { ledger: this.#with(request.typeUrl, { ...type, acked }), outcome: { kind: 'ack', version: request.versionInfo, nonce } };
  }

  /** See `Ledger.respond`; in SotW, a resend of any name re-sends the whole response. */
  respond(typeUrl: TypeUrl, snapshot: Snapshot, now: number, resend?: ReadonlySet<string>): { ledger: SotwLedger; response?: XdsResponse } {
    const force = resend !== undefined && resend.size > 0;
    const type = this.#types[slotOf(typeUrl)];
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
        // SotW's version_info is the last version the client accepted: it is recorded as ACKed,
        // or rollouts, inspection and the node's mTLS status would wait for an ACK never owed.
        return { ledger: this.#with(typeUrl, { ...type, sent: { version, nonce: '', resources, at: now }, acked: { version, nonce: '', at: now } }) };
      }
    }
    const nonce = String(this.#nonce + 1);
    const next = new SotwLedger(this.streamId, this.#nonce + 1, withType(this.#types, typeUrl, typeLedger({ ...type, sent: { version, nonce, resources, at: now }, resendOwed: false })));
    const changed = force || type.resendOwed ? resources : changedSinceAcked(typeUrl, type, resources);
    return { ledger: next, response: { protocol: 'sotw', typeUrl, version, nonce, resources: changed } };
  }

  /** Types the client has asked for on this stream, in push order (I5). */
  requestedTypes(): readonly TypeUrl[] {
    return typesIn(this.#types);
  }

  /** Whether the stream's first request said the client holds configuration (a version it was sent before). */
  holdsConfiguration(): boolean {
    for (const type of this.#types) if (type !== undefined && type.heldVersion !== '') return true;
    return false;
  }

  report(typeUrl: TypeUrl): TypeReport | undefined {
    const type = this.#types[slotOf(typeUrl)];
    return type && { ...type, perResourceVersions: false };
  }

  /** Whether the last response of some type was NACKed: `status()`'s answer, without building it. */
  nacking(): boolean {
    return lastNacked(this.#types);
  }

  acknowledged(): boolean {
    return allAcked(this.#types);
  }

  /** Per-type status for inspection, keyed by short name. */
  status(): Record<string, TypeStatus> {
    const out: Record<string, TypeStatus> = {};
    for (const [slot, type] of this.#types.entries()) {
      if (type === undefined) continue;
      const typeUrl = PUSH_ORDER[slot]!;
      out[SHORT_NAME[typeUrl]] = {
        typeUrl,
        subscription: type.subscription.view,
        ...(type.sent && {
          sent: { version: type.sent.version, nonce: type.sent.nonce, resources: type.sent.resources.length, at: isoTime(type.sent.at) },
        }),
        ...(type.acked && { acked: { version: type.acked.version, nonce: type.acked.nonce, at: isoTime(type.acked.at) } }),
        ...(type.nacked && {
          nacked: { version: type.nacked.version, nonce: type.nacked.nonce, message: type.nacked.message, at: isoTime(type.nacked.at) },
        }),
      };
    }
    return out;
  }

  /** This ledger with `type` as the type's record, in the records' one shape. */
  #with(typeUrl: TypeUrl, type: TypeLedger): SotwLedger {
    return new SotwLedger(this.streamId, this.#nonce, withType(this.#types, typeUrl, typeLedger(type)));
  }
}

function sotwRequest(request: TypedRequest): XdsRequest & { readonly typeUrl: TypeUrl } {
  if (request.protocol !== 'sotw') throw new Error(`a ${request.protocol} request reached a SotW ledger`);
  return request;
}
