import type { EncodedResource } from '../encode.js';
import type { Snapshot } from '../snapshot.js';
import type { TypeUrl } from '../type-urls.js';
import { DeltaLedger } from './delta-ledger.js';
import type { RequestKind } from './request-kind.js';
import { SotwLedger } from './sotw-ledger.js';
import type { Protocol, TypedRequest } from './stream-request.js';

/** One DiscoveryResponse to send, SotW: every resource of the type the subscription selects. */
export interface SotwResponse {
  readonly protocol: 'sotw';
  readonly typeUrl: TypeUrl;
  readonly version: string;
  readonly nonce: string;
  readonly resources: readonly EncodedResource[];
}

/** One DeltaDiscoveryResponse to send: the resources that changed, and the names to remove. */
export interface DeltaResponse {
  readonly protocol: 'delta';
  readonly typeUrl: TypeUrl;
  /** `system_version_info`, for debugging only (xDS): the version of all the type holds for the node. */
  readonly version: string;
  readonly nonce: string;
  readonly resources: readonly EncodedResource[];
  readonly removed: readonly string[];
}

/** What a session decided to send, before encoding. */
export type XdsResponse = SotwResponse | DeltaResponse;

/**
 * How a request relates to what was sent on the stream: its `requestKind`, unless it answers a
 * response this stream did not send last (SotW: stale, recorded and not answered; Delta: a
 * request) or before anything was sent (a request).
 */
export type RequestOutcome =
  | { readonly kind: Extract<RequestKind, 'request'> }
  | { readonly kind: Extract<RequestKind, 'ack'>; readonly version: string; readonly nonce: string }
  | { readonly kind: Extract<RequestKind, 'nack'>; readonly version: string; readonly nonce: string; readonly message: string }
  | { readonly kind: 'stale'; readonly nonce: string };

/** What the node was sent of a type and holds: the resources, and the response that last carried some. */
export interface Sent {
  /** SotW: the response's version; Delta: the system version (each resource has its own). */
  readonly version: string;
  readonly nonce: string;
  /**
   * SotW: every resource the last response makes the node hold (an EDS, RDS or SDS response
   * carries only those that changed since what the node ACKed); Delta: every resource the node holds.
   */
  readonly resources: readonly EncodedResource[];
  readonly at: number;
}

/** What a stream holds of one type, for reports (CSDS, `/sessions/{node}/xds`). */
export interface TypeReport {
  readonly subscription: { readonly wildcard: boolean; readonly names: ReadonlySet<string> };
  readonly sent?: Sent;
  readonly acked?: { readonly version: string; readonly nonce: string; readonly at: number };
  readonly nacked?: { readonly version: string; readonly nonce: string; readonly message: string; readonly at: number };
  /** Delta: each resource's version is its own (`resource.version`), not the response's. */
  readonly perResourceVersions: boolean;
}

/** A type's status on a stream, as the API shows it. */
export interface TypeStatus {
  readonly typeUrl: string;
  readonly subscription: { readonly wildcard: boolean; readonly names: readonly string[] };
  readonly sent?: { readonly version: string; readonly nonce: string; readonly resources: number; readonly at: string };
  readonly acked?: { readonly version: string; readonly nonce: string; readonly at: string };
  readonly nacked?: { readonly version: string; readonly nonce: string; readonly message: string; readonly at: string };
  /** Delta: what the node holds, name → version. */
  readonly held?: Readonly<Record<string, string>>;
}

/**
 * Per stream and per type: what the client subscribed to, was sent, ACKed and NACKed, and so
 * what a response must carry and whether one is owed. The session machine decides when to ask;
 * the ledger, a value the chart assigns, answers. SotW and Delta each have one; a new stream
 * gets a new ledger, as nonces are valid only within a stream (xDS).
 */
export interface Ledger {
  readonly streamId: string;
  readonly protocol: Protocol;
  /** Records a request: a subscription change, an ACK, a NACK. */
  receive(request: TypedRequest, now: number): { ledger: Ledger; outcome: RequestOutcome };
  /**
   * The response owed for a type from this snapshot, with the ledger that has it recorded; no
   * response when none is owed. `resend` names resources to send even at an unchanged version:
   * EDS after a cluster changed, so it finishes warming (I5).
   */
  respond(typeUrl: TypeUrl, snapshot: Snapshot, now: number, resend?: ReadonlySet<string>): { ledger: Ledger; response?: XdsResponse };
  /** Types the client has asked for on this stream, in push order (I5). */
  requestedTypes(): readonly TypeUrl[];
  /** Whether the stream's first request said the client holds configuration from before. */
  holdsConfiguration(): boolean;
  /** Whether the last response of some type was NACKed. */
  nacking(): boolean;
  /** Whether the last response of every type was ACKed: the client holds all it was sent. */
  acknowledged(): boolean;
  /** Per-type status for inspection, keyed by short name. */
  status(): Record<string, TypeStatus>;
  report(typeUrl: TypeUrl): TypeReport | undefined;
}

/** The ledger of a new stream of `protocol`, before its first request. */
export function openLedger(protocol: Protocol, streamId: string): Ledger {
  return protocol === 'delta' ? DeltaLedger.open(streamId) : SotwLedger.open(streamId);
}
