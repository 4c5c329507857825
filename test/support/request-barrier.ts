import type { ControlPlane } from '../../src/index.js';
import type { SessionView } from '../../src/machines/index.js';
import { ROUTE } from '../../src/xds/index.js';
import { DeltaStream, type AdsStream } from './ads-client.js';
import { eventually } from './traffic.js';

const rounds = new WeakMap<object, number>();

/**
 * Waits until `node`'s session has handled everything `stream` sent so far, and answers its view
 * then. It sends a barrier, a subscription to a route no mesh has (SotW sends nothing for it,
 * Delta answers it removed), and waits until the session shows it: a stream's requests reach
 * its session in order. It stops early when the session, once seen, is gone, when it let go of
 * the stream after taking it, or when the stream ended; the view (or its absence) shows which. Nothing
 * is written to the store and no tick is sent meanwhile, so the view shows what the requests
 * alone led to (I2). The node must have no other stream open: the first the session is seen
 * holding is taken for `stream`.
 */
export async function viewAfterRequests(cp: ControlPlane, node: string, stream: AdsStream | DeltaStream): Promise<SessionView | undefined> {
  const round = (rounds.get(stream) ?? 0) + 1;
  rounds.set(stream, round);
  const barrier = `request-barrier-${round}`;
  // SotW: the request replaces the stream's RDS names; tests that use this subscribe to none.
  if (stream instanceof DeltaStream) stream.send({ typeUrl: ROUTE, subscribe: [barrier] });
  else stream.send({ typeUrl: ROUTE, resourceNames: [barrier] });
  // A session seen once and gone since was evicted or failed: waiting longer shows nothing more.
  let seen = cp.session(node) !== undefined;
  let adopted: string | undefined;
  let view: SessionView | undefined;
  await eventually(`the barrier ${barrier} handled by the session of ${node}`, () => {
    view = cp.session(node);
    if (stream.ended !== undefined) return true;
    if (view === undefined) return seen;
    seen = true;
    const streaming = view.state === 'awaiting-snapshot' || view.state === 'serving';
    if (adopted === undefined) {
      if (!streaming) return false;
      adopted = view.stream?.id;
    }
    // It let go of the stream after taking it: what it shows now is the answer.
    if (!streaming || view.stream?.id !== adopted) return true;
    return view.types['RDS']?.subscription.names.includes(barrier) === true;
  });
  return view;
}
