import { type Snapshot, type StreamLedger, CLUSTER, ENDPOINT } from '../xds/index.js';
import type { SessionIntent, TypedRequest } from './session-events.js';

/** A step's outcome: the stream's ledger after it, and what to do. */
export interface Effects {
  readonly ledger: StreamLedger;
  readonly intents: readonly SessionIntent[];
}

/**
 * Everything owed to a stream from a new snapshot, in push order: CDS, EDS, LDS, RDS. When
 * clusters changed, EDS is re-sent even at an unchanged version, because Envoy keeps a
 * changed cluster warming until it gets a ClusterLoadAssignment (I5).
 */
export function pushIntents(ledger: StreamLedger, snapshot: Snapshot, at: number): Effects {
  const intents: SessionIntent[] = [];
  let clustersChanged = false;
  let next = ledger;
  for (const typeUrl of ledger.requestedTypes()) {
    const { ledger: after, response } = next.respond(typeUrl, snapshot, at, typeUrl === ENDPOINT && clustersChanged);
    next = after;
    if (!response) continue;
    if (typeUrl === CLUSTER) clustersChanged = true;
    intents.push({ type: 'send', streamId: ledger.streamId, response });
  }
  return { ledger: next, intents };
}

/**
 * Records a request on the stream's ledger and, when a snapshot is being served, answers it
 * if a response is owed. A stale nonce is recorded but not answered (xDS "stale nonce").
 */
export function answerIntents(ledger: StreamLedger, request: TypedRequest, at: number, snapshot: Snapshot | undefined): Effects {
  const intents: SessionIntent[] = [];
  const { ledger: received, outcome } = ledger.receive(request, at);
  if (outcome.kind === 'nack') {
    const { version, nonce, message } = outcome;
    intents.push({ type: 'nacked', typeUrl: request.typeUrl, version, nonce, message });
  }
  if (!snapshot || outcome.kind === 'stale') return { ledger: received, intents };
  const { ledger: answered, response } = received.respond(request.typeUrl, snapshot, at);
  if (response) intents.push({ type: 'send', streamId: ledger.streamId, response });
  return { ledger: answered, intents };
}
