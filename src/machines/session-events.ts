import type { EndStatus, Protocol, RequestKind, Snapshot, StreamAuthentication, TypedRequest, TypeUrl, XdsResponse } from '../xds/index.js';

/** A gRPC stream as the session knows it; the call itself stays in the server. */
export interface StreamInfo {
  readonly id: string;
  /** Remote address, for inspection. */
  readonly peer: string;
  /** Epoch ms. */
  readonly openedAt: number;
  /** How the client speaks on it: State of the World, or Delta. */
  readonly protocol: Protocol;
  /** How its node proved who it is, before the session was told of it. */
  readonly authentication: StreamAuthentication;
}

export type { TypedRequest };

/** Why a snapshot could not be generated; `code` is the generator error's code. */
export interface GenerationFailure {
  readonly code: string;
  readonly message: string;
}

/** A node's configuration at the store's current revision, or why there is none at that revision. */
export type Generation =
  | { readonly ok: true; readonly snapshot: Snapshot }
  | { readonly ok: false; readonly revision: number; readonly error: GenerationFailure };

/**
 * Reads a node's configuration from the store's current projection. It only reads, so a
 * session may call it within a step: every event after which a session generates carries it.
 */
export type Generate = (node: string) => Generation;

/**
 * The event each kind of request is (`requestKind`, src/xds/stream): a request with no response
 * nonce is a new or changed subscription; one answering a nonce is an ACK, or a NACK when it
 * carries `error_detail`. Named here once; the registry and the story use this table.
 */
export const REQUEST_EVENTS = { request: 'xds.requested', ack: 'xds.acked', nack: 'xds.nacked' } as const satisfies Record<RequestKind, string>;

/** A stream's request after its first, one event type per kind (a union XState narrows by `type`). */
export type RequestEvent = {
  readonly [K in RequestKind]: { readonly type: (typeof REQUEST_EVENTS)[K]; readonly at: number; readonly streamId: string; readonly request: TypedRequest };
}[RequestKind];

/**
 * Everything that happens to a session, as facts. The server, the store's change feed, the
 * watchdog and the generator each turn what they see into one of these; `at` is epoch ms,
 * stamped at the edge (the machine never reads a clock).
 */
export type SessionEvent =
  /** The first request of a new stream, carrying the node id; `generate` reads the node's configuration, generated within the step. */
  | { readonly type: 'stream.opened'; readonly at: number; readonly stream: StreamInfo; readonly request: TypedRequest; readonly generate: Generate }
  /** A later request on a stream, named after its kind (`REQUEST_EVENTS`). */
  | RequestEvent
  | { readonly type: 'stream.closed'; readonly at: number; readonly streamId: string; readonly reason: string }
  | { readonly type: 'snapshot.generated'; readonly at: number; readonly snapshot: Snapshot }
  | { readonly type: 'snapshot.failed'; readonly at: number; readonly revision: number; readonly error: GenerationFailure }
  /** The store read the log to its end after this stream asked it to (`catchUp`); `generate` reads the node's configuration from it. */
  | { readonly type: 'store.caughtUp'; readonly at: number; readonly streamId: string; readonly generate: Generate }
  /** The store could not be read when this stream asked it to (`catchUp`); the next tick tries again. */
  | { readonly type: 'store.catchUpFailed'; readonly at: number; readonly streamId: string; readonly reason: string }
  /** The store's projection moved to `revision`; `generate` reads a node's configuration from it. */
  | { readonly type: 'store.advanced'; readonly at: number; readonly revision: number; readonly generate: Generate }
  /** The watchdog's safety-net tick, with the store's current revision and how to read a node's configuration at it. */
  | { readonly type: 'watchdog.ticked'; readonly at: number; readonly revision: number; readonly generate: Generate }
  | { readonly type: 'shutdown.requested'; readonly at: number; readonly reason: string }
  /** The node's workload certificate was issued (docs/mtls.md); `generate` reads its configuration, which holds it. */
  | { readonly type: 'certificate.issued'; readonly at: number; readonly certificate: CertificateInfo; readonly generate: Generate }
  /** Issuing failed (the store down, the mesh without a CA): the node keeps what it holds, and it is tried again. */
  | { readonly type: 'certificate.failed'; readonly at: number; readonly reason: string }
  /** The node's certificate reached 2/3 of its life, or a failed issue is due again: time to issue one (I8). */
  | { readonly type: 'certificate.due'; readonly at: number };

/** What the session shows of the certificate it was last issued (the key stays with the instance). */
export interface CertificateInfo {
  readonly spiffeIds: readonly string[];
  readonly serial: string;
  /** The id of the CA that signed it. */
  readonly issuer: string;
  /** Epoch ms. */
  readonly notAfter: number;
  /** Epoch ms: when it is renewed (2/3 of its life). */
  readonly renewAt: number;
}

export type SessionEventType = SessionEvent['type'];

/** A generation as the event that tells a session of it. */
export function generationEvent(generation: Generation, at: number): Extract<SessionEvent, { type: 'snapshot.generated' | 'snapshot.failed' }> {
  return generation.ok ? { type: 'snapshot.generated', at, snapshot: generation.snapshot } : { type: 'snapshot.failed', at, revision: generation.revision, error: generation.error };
}

export type { EndStatus };

/**
 * What a session asks the outside world to do. The registry carries these out: it has the
 * store read the log to its end, issues certificates, and the stream writer sends bytes or
 * ends a stream. A session generates within a step, by the means its event carries
 * (`Generate`); `generate` asks for a generation to come as an event of its own.
 */
export type SessionIntent =
  | { readonly type: 'generate' }
  /** Read the store to the log's end, then answer with `store.caughtUp` or `store.catchUpFailed` for this stream. */
  | { readonly type: 'catchUp'; readonly streamId: string }
  | { readonly type: 'send'; readonly streamId: string; readonly response: XdsResponse }
  | { readonly type: 'end'; readonly streamId: string; readonly status: EndStatus }
  | { readonly type: 'nacked'; readonly typeUrl: TypeUrl; readonly version: string; readonly nonce: string; readonly message: string }
  /** Issue the node a workload certificate, then answer with `certificate.issued` or `certificate.failed`. */
  | { readonly type: 'issueCertificate' };
