import type { StreamRequest } from './stream-request.js';

/**
 * What a request says of itself (xDS "ACK and NACK semantics"): with no response nonce it asks
 * (a stream's first request of a type, or a subscription change); answering a nonce it is an
 * ACK, or a NACK when it carries `error_detail`. Whether that nonce is the one last sent (or a
 * stale one) only the stream's ledger can tell, from what it sent.
 */
export type RequestKind = 'request' | 'ack' | 'nack';

/** The one place a request is classified: the ledgers start from it, and the session's event is named after it. */
export function requestKind(request: StreamRequest): RequestKind {
  if (request.responseNonce === '') return 'request';
  return request.errorDetail === undefined ? 'ack' : 'nack';
}
