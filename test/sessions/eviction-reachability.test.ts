import { status } from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionRegistry } from '../../src/sessions/index.js';
import { CLUSTER, type SessionGateway } from '../../src/xds/index.js';
import type { AdsStream, DeltaStream } from '../support/ads-client.js';
import { collectGarbage } from '../support/garbage-collection.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { OpenStreams } from '../support/open-streams.js';
import { eventually } from '../support/traffic.js';
import { sessionIn } from '../xds/fixtures.js';

/**
 * I3 by what stays reachable, not by what the counted tables hold: an evicted session's actor,
 * its snapshots, its ledger, its story and the sinks of its streams must all be let go, whichever
 * way it was evicted. A session still serving keeps its own, which shows the weak references
 * see what they should.
 */

const GRACE = 10_000;

interface Watched {
  readonly what: string;
  readonly ref: WeakRef<object>;
}

let harness: Harness;
let registry: SessionRegistry;
/** The sink of every stream handed to the sessions. */
let sinks: Map<string, Watched[]>;
const streams = new OpenStreams(() => harness.xds);

beforeEach(async () => {
  sinks = new Map();
  harness = await startHarness({
    evictionGrace: GRACE,
    // The seam between the xDS server and the sessions: it notes each sink, and lends the test the registry.
    sessionGateway: (sessions) => {
      if (!(sessions instanceof SessionRegistry)) throw new Error('the sessions are not a SessionRegistry');
      registry = sessions;
      const gateway: SessionGateway = {
        open: (stream, sink, node, request) => {
          sinks.set(node, [...(sinks.get(node) ?? []), { what: `${node}: the sink of stream ${stream.id}`, ref: new WeakRef(sink) }]);
          sessions.open(stream, sink, node, request);
        },
        request: (...args) => sessions.request(...args),
        close: (...args) => sessions.close(...args),
      };
      return gateway;
    },
  });
  for (const [i, name] of ['sotw-1', 'delta-1', 'superseded-1', 'deleted-1', 'live-1'].entries()) await harness.cp.apply(backendDataplane(name, 10_001 + i));
});

afterEach(async () => {
  streams.closeAll();
  await harness.stop();
});


/** A stream for `node`, served its first response. */
async function served(node: string, protocol: 'sotw' | 'delta' = 'sotw'): Promise<AdsStream | DeltaStream> {
  const stream = streams.open(protocol);
  stream.send({ typeUrl: CLUSTER, nodeId: node });
  await stream.nextResponse(1);
  return stream;
}

/** Weak references to what `node`'s session holds now: nothing else is kept of them here. */
function watch(node: string): Watched[] {
  const session = registry.session(node);
  if (session === undefined) throw new Error(`${node} has no session`);
  const snapshot = session.actor.getSnapshot();
  const { phase } = snapshot.context;
  const held: Array<[string, object]> = [
    ['session', session],
    ['actor', session.actor],
    ['actor snapshot', snapshot],
    ['story', session.story],
  ];
  if ('ledger' in phase) held.push(['ledger', phase.ledger]);
  if ('snapshot' in phase) held.push(['Snapshot', phase.snapshot]);
  return held.map(([what, target]) => ({ what: `${node}: its ${what}`, ref: new WeakRef(target) }));
}

const alive = (watched: readonly Watched[]) => watched.filter(({ ref }) => ref.deref() !== undefined).map(({ what }) => what);

describe('I3: an evicted session leaves nothing reachable', () => {
  it('lets go of the actor, snapshots, ledger, story and stream sinks of every session evicted, and keeps those of the one still serving', async () => {
    const evicted: Watched[] = [];

    // Served over SotW and over Delta, then gone for longer than the grace.
    const sotw = await served('default.sotw-1');
    evicted.push(...watch('default.sotw-1'));
    sotw.close();
    const delta = await served('default.delta-1', 'delta');
    evicted.push(...watch('default.delta-1'));
    delta.close();

    // Served, superseded by a newer stream, and that one gone too.
    const older = await served('default.superseded-1');
    evicted.push(...watch('default.superseded-1'));
    const newer = await served('default.superseded-1');
    expect((await older.ending()).code).toBe(status.ABORTED);
    evicted.push(...watch('default.superseded-1'));
    newer.close();

    // Its Dataplane deleted while it is served: ended and evicted at once.
    const deleted = await served('default.deleted-1');
    evicted.push(...watch('default.deleted-1'));
    await harness.cp.delete({ type: 'Dataplane', mesh: 'default', name: 'deleted-1' });
    expect((await deleted.ending()).code).toBe(status.NOT_FOUND);

    // Connected before its Dataplane exists: waiting, never served, then gone.
    const early = streams.open('sotw');
    early.send({ typeUrl: CLUSTER, nodeId: 'default.early-1' });
    await sessionIn(harness.cp, 'default.early-1', 'awaiting-snapshot');
    evicted.push(...watch('default.early-1'));
    early.close();

    const live = await served('default.live-1');
    const kept = watch('default.live-1').filter(({ what }) => /its (session|actor|story)$/.test(what));

    await eventually('every stream but the live one let go', () => harness.cp.sizes().streams === 1 && harness.cp.listSessions().every((view) => view.node === 'default.live-1' || view.state === 'disconnected'));
    harness.clock.increment(GRACE);
    expect(harness.cp.listSessions().map((view) => view.node)).toEqual(['default.live-1']);
    expect(harness.cp.sizes()).toMatchObject({ sessions: 1, streams: 1, gates: 1 });
    for (const [node, watched] of sinks) (node === 'default.live-1' ? kept : evicted).push(...watched);

    await collectGarbage();
    expect(alive(evicted)).toEqual([]);
    expect(alive(kept)).toEqual(kept.map(({ what }) => what));
    expect(live.ended).toBeUndefined();
  });
});
