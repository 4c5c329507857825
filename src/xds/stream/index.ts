/**
 * The per-stream protocol state of xDS: what one stream subscribed to, was sent, ACKed and
 * NACKed, per type (SotW and Delta), and the one classification of a request. Values with no
 * I/O: the session chart assigns a ledger and asks it what is owed; the server and the sessions
 * import it, and it imports nothing of theirs (test/architecture/boundaries.test.ts).
 */
export { DeltaLedger } from './delta-ledger.js';
export { openLedger, type DeltaResponse, type Ledger, type RequestOutcome, type Sent, type SotwResponse, type TypeReport, type TypeStatus, type XdsResponse } from './ledger.js';
export { requestKind, type RequestKind } from './request-kind.js';
export { SotwLedger } from './sotw-ledger.js';
export { PROTOCOLS, type DeltaRequest, type RequestBase, type Protocol, type StreamRequest, type TypedRequest, type XdsRequest } from './stream-request.js';
export { Subscription } from './subscription.js';
