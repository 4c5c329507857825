import { type Snapshot, type Ledger, CLUSTER, ENDPOINT } from '../xds/index.js';
import type { SessionIntent, TypedRequest } from './session-events.js';

/** A step's outcome: the stream's ledger after it, and what to do. */
export interface Effects {
  readonly ledger: Ledger;
  readonly intents: readonly SessionIntent[];
}

/**
 * Everything owed to a stream from a new snapshot, in push order: CDS, EDS, LDS, RDS. The
 * assignments of the clusters just sent are sent again even at an unchanged version, because
 * Envoy keeps a changed cluster warming until it gets its ClusterLoadAssignment (I5).
 */
export function pushIntents(ledger: Ledger, snapshot: Snapshot, at: number): Effects {
  const intents: SessionIntent[] = [];
  let warming: ReadonlySet<string> | undefined;
  let next = ledger;
  for (const typeUrl of ledger.requestedTypes()) {
    const { ledger: after, response } = next.respond(typeUrl, snapshot, at, typeUrl === ENDPOINT ? warming : undefined);
    next = after;
    if (!response) continue;
    if (typeUrl === CLUSTER) warming = new Set(response.resources.flatMap((cluster) => cluster.references));
    intents.push({ type: 'send', streamId: ledger.streamId, response });
  }
  return { ledger: next, intents };
}

/**
 * Records a request on the stream's ledger and, when a snapshot is being served, answers it
 * if a response is owed. A stale nonce is recorded but not answered (xDS "stale nonce").
 */
export function answerIntents(ledger: Ledger, request: TypedRequest, at: number, snapshot: Snapshot | undefined): Effects {
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
