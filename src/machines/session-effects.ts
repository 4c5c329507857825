import type { Snapshot } from '../xds/snapshot.js';
import type { StreamLedger } from '../xds/stream-ledger.js';
import { CLUSTER, ENDPOINT } from '../xds/type-urls.js';
import type { SessionIntent, TypedRequest } from './session-events.js';

/**
 * Everything owed to a stream from a new snapshot, in push order: CDS, EDS, LDS, RDS. When
 * clusters changed, EDS is re-sent even at an unchanged version, because Envoy keeps a
 * changed cluster warming until it gets a ClusterLoadAssignment (I5).
 */
export function pushIntents(ledger: StreamLedger, snapshot: Snapshot, at: number): SessionIntent[] {
  const intents: SessionIntent[] = [];
  let clustersChanged = false;
  for (const typeUrl of ledger.requestedTypes()) {
    const response = ledger.respond(typeUrl, snapshot, at, typeUrl === ENDPOINT && clustersChanged);
    if (!response) continue;
    if (typeUrl === CLUSTER) clustersChanged = true;
    intents.push({ type: 'send', streamId: ledger.streamId, response });
  }
  return intents;
}

/**
 * Records a request on the stream's ledger and, when a snapshot is being served, answers it
 * if a response is owed. A stale nonce is recorded but not answered (xDS "stale nonce").
 */
export function answerIntents(
  ledger: StreamLedger,
  request: TypedRequest,
  at: number,
  snapshot: Snapshot | undefined,
): SessionIntent[] {
  const intents: SessionIntent[] = [];
  const outcome = ledger.receive(request, at);
  if (outcome.kind === 'nack') {
    const { version, nonce, message } = outcome;
    intents.push({ type: 'nacked', typeUrl: request.typeUrl, version, nonce, message });
  }
  if (!snapshot || outcome.kind === 'stale') return intents;
  const response = ledger.respond(request.typeUrl, snapshot, at);
  if (response) intents.push({ type: 'send', streamId: ledger.streamId, response });
  return intents;
}
