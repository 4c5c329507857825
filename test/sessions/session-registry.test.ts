import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { generate, validate } from '../../src/mesh/index.js';
import { SESSION_STATES, type TransitionRecord } from '../../src/machines/index.js';
import { SessionRegistry, SessionScheduler, SessionViews, type SessionCallbacks } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import { CLUSTER, LISTENER } from '../../src/xds/type-urls.js';
import { BACKEND } from '../xds/fixtures.js';
import { RecordingSink } from '../support/recording-sink.js';


async function registry(scheduler = new SessionScheduler(), callbacks?: SessionCallbacks) {
  const store = createMemoryStore({ instance: 'registry' });
  await store.start();
  const parsed = validate(BACKEND);
  if (!parsed.ok) throw new Error('fixture is invalid');
  await store.put(parsed.resource);
  const clock = new SimulatedClock();
  const sessions = new SessionRegistry({
    instanceId: 'registry',
    evictionGrace: 10_000,
    generate: (node) => {
      const result = generate(node, store.projection);
      return result.ok ? result : { ok: false, revision: store.projection.revision, error: { code: result.error.code, message: result.error.message } };
    },
    revision: () => store.projection.revision,
    catchUp: () => store.refresh(),
    now: () => 0,
    clock,
    scheduler,
    logger: pino({ level: 'silent' }),
    ...(callbacks && { callbacks }),
  });
  // What the server reports is carried out in order, in this turn or, once its slice is spent, in later ones.
  return { sessions, store, clock, views: new SessionViews(sessions, 'registry'), settled: () => scheduler.settled('requests'), close: () => store.close() };
}

const NODE = 'default.backend-1';
const stream = (id: string) => ({ id, peer: 'test', openedAt: 0, protocol: 'sotw' as const, authentication: { by: 'none' as const } });
const first = { protocol: 'sotw', typeUrl: CLUSTER, versionInfo: '', resourceNames: [], responseNonce: '', nodeId: NODE } as const;

describe('I4: a superseded stream can no longer touch the node', () => {
  it('changes nothing with its requests, ACKs, NACKs or its end once a newer stream owns the node', async () => {
    const { sessions, views, settled, close } = await registry();
    const [older, newer] = [new RecordingSink(), new RecordingSink()];
    sessions.open(stream('old'), older, NODE, first);
    await settled();
    expect(older.sent.map((response) => response.typeUrl)).toEqual([CLUSTER]);
    expect(views.get(NODE)?.stream?.id).toBe('old');
    sessions.open(stream('new'), newer, NODE, first);
    await settled();
    expect(older.ended?.code).toBe('ABORTED');
    expect(newer.sent.map((response) => response.typeUrl)).toEqual([CLUSTER]);
    const before = views.get(NODE);
    // Served within its opening step, the newer stream leaves the session in serving: still a step of its story.
    expect(before?.transitions.at(-1)).toMatchObject({ event: 'stream.opened', from: 'serving', to: 'serving', detail: { stream: 'new' } });

    // The old stream's last words, as a client that has not yet heard of its end would send them.
    const nonce = older.sent[0]!.nonce;
    sessions.request(NODE, 'old', { ...first, responseNonce: nonce, errorDetail: { code: 3, message: 'from the old stream' } });
    sessions.request(NODE, 'old', { ...first, versionInfo: 'whatever it held', responseNonce: nonce });
    sessions.request(NODE, 'old', { protocol: 'sotw', typeUrl: LISTENER, versionInfo: '', resourceNames: [], responseNonce: '' });
    sessions.close(NODE, 'old', 'the old stream ended');
    await settled();

    const after = views.get(NODE);
    expect(after?.state).toBe('serving');
    expect(after?.stream?.id).toBe('new');
    expect(after?.types).toEqual(before?.types);
    expect(after?.transitions).toEqual(before?.transitions);
    expect(newer.sent).toHaveLength(1);
    expect(newer.ended).toBeUndefined();
    await close();
  });
});

describe('a stream whose first request waited its turn when the instance began to stop', () => {
  it('is refused with UNAVAILABLE, and leaves no session behind', async () => {
    // A turn whose slice is already spent: what the server hands over waits for the next turn.
    let now = 0;
    let deferred: Array<() => void> = [];
    const scheduler = new SessionScheduler({ now: () => now, defer: (turn) => deferred.push(turn), sliceMs: 8 });
    scheduler.schedule([0], () => (now += 10), 'requests');
    const { sessions, close } = await registry(scheduler);
    const waiting = new RecordingSink();
    sessions.open(stream('waiting'), waiting, NODE, first);
    expect(sessions.size).toBe(0);

    sessions.shutdown('control plane shutting down; reconnect to another instance');
    while (deferred.length > 0) {
      const turn = deferred;
      deferred = [];
      for (const run of turn) run();
    }
    expect(waiting.ended).toEqual({ code: 'UNAVAILABLE', message: 'control plane shutting down; reconnect to another instance' });
    expect(waiting.sent).toEqual([]);
    expect(sessions.size).toBe(0);
    await close();
  });
});

describe('the sessions in node order, and their counts per state, kept by the registry', () => {
  it('match the sessions as they come, move and go, page by page, and are empty once all are evicted (I3)', async () => {
    const { sessions, views, settled, close } = await registry();
    const inOrder = () => sessions.inOrder(0, sessions.size).map((session) => session.node);
    const expectKept = () => {
      const nodes = [...sessions.sessions()].map((session) => session.node);
      expect(inOrder()).toEqual([...nodes].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      const counted = Object.fromEntries(SESSION_STATES.map((state) => [state, 0]));
      for (const { state } of views.summaries()) counted[state]!++;
      expect(sessions.counts()).toEqual(counted);
    };
    // Opened out of order: one served, two whose dataplanes do not exist (they wait for a snapshot),
    // one with an invalid node id (refused and evicted at once).
    const nodes = ['default.zeta', NODE, 'not-a-node-id', 'default.alpha'];
    const sinks = nodes.map(() => new RecordingSink());
    nodes.forEach((node, at) => sessions.open(stream(`s${at}`), sinks[at]!, node, { ...first, nodeId: node }));
    await settled();
    expectKept();
    expect(inOrder()).toEqual(['default.alpha', NODE, 'default.zeta']);
    expect(sessions.counts()).toMatchObject({ 'awaiting-snapshot': 2, serving: 1, evicted: 0 });
    expect(views.inOrder(1, 1)).toEqual({ items: [views.get(NODE)], total: 3, counts: { byState: sessions.counts(), byInstance: { registry: 3 } } });
    expect(views.inOrder(2, undefined).items.map((view) => view.node)).toEqual(['default.zeta']);

    sessions.close(NODE, 's1', 'client closed the stream');
    await settled();
    expectKept();
    expect(sessions.counts()).toMatchObject({ 'awaiting-snapshot': 2, disconnected: 1 });

    sessions.shutdown('control plane shutting down; reconnect to another instance');
    await settled();
    expect(sessions.size).toBe(0);
    expect(inOrder()).toEqual([]);
    expect(sessions.counts()).toEqual(Object.fromEntries(SESSION_STATES.map((state) => [state, 0])));
    expect(views.inOrder(0, 10)).toEqual({ items: [], total: 0, counts: { byState: sessions.counts(), byInstance: {} } });
    await close();
  });
});

describe('sessions created under shared XState systems (session-systems.ts)', () => {
  it('each keep their own eviction timer: nodes that came back stay, the others are evicted, across several systems', async () => {
    const { sessions, clock, settled, close } = await registry();
    // More sessions than one system hosts, each disconnected with its eviction grace running.
    const nodes = Array.from({ length: 150 }, (_, at) => `default.node-${String(at).padStart(3, '0')}`);
    nodes.forEach((node, at) => sessions.open(stream(`first-${at}`), new RecordingSink(), node, { ...first, nodeId: node }));
    await settled();
    nodes.forEach((node, at) => sessions.close(node, `first-${at}`, 'client closed the stream'));
    await settled();
    expect(sessions.counts()).toMatchObject({ disconnected: 150 });
    // I3: the systems outlive their sessions, so once every session is evicted none may keep a timer.
    const systems = new Set([...sessions.sessions()].map((session) => session.actor.system));
    expect(systems.size).toBeGreaterThan(1);
    const back = nodes.filter((_, at) => at % 3 === 0);
    back.forEach((node) => sessions.open(stream(`again-${node}`), new RecordingSink(), node, { ...first, nodeId: node }));
    await settled();

    clock.increment(10_000);
    await settled();
    expect([...sessions.sessions()].map((session) => session.node).sort()).toEqual(back);
    expect(sessions.counts()).toMatchObject({ 'awaiting-snapshot': back.length, disconnected: 0 });
    back.forEach((node) => sessions.close(node, `again-${node}`, 'client closed the stream'));
    await settled();
    clock.increment(10_000);
    await settled();
    expect(sessions.size).toBe(0);
    for (const system of systems) expect(system.getSnapshot()._scheduledEvents).toEqual({});
    await close();
  });
});

describe('a session whose step throws', () => {
  it('ends its stream with INTERNAL naming the node and the error, leaves nothing behind, and a new stream starts it afresh', async () => {
    const { sessions, settled, close } = await registry();
    // A bug the server never lets happen: a Delta request on a SotW stream, which the ledger refuses by throwing.
    const failing = new RecordingSink();
    sessions.open(stream('failing'), failing, NODE, first);
    sessions.request(NODE, 'failing', { protocol: 'delta', typeUrl: LISTENER, subscribe: [], unsubscribe: [], initialVersions: {}, responseNonce: '' });
    await settled();
    expect(failing.ended).toEqual({ code: 'INTERNAL', message: `internal error in the session of ${NODE}: a delta request reached a SotW ledger` });
    expect(sessions.size).toBe(0);
    expect(sessions.streams).toBe(0);
    expect(failing.sent.map((response) => response.typeUrl)).toEqual([CLUSTER]);
    expect(sessions.counts()).toMatchObject({ serving: 0, 'awaiting-snapshot': 0 });

    const healthy = new RecordingSink();
    sessions.open(stream('healthy'), healthy, NODE, first);
    await settled();
    expect(healthy.sent.map((response) => response.typeUrl)).toEqual([CLUSTER]);
    expect(sessions.counts()).toMatchObject({ serving: 1 });
    await close();
  });

  it('ends a reconnecting stream whose opening throws with INTERNAL, at once, rather than leaving it unanswered', async () => {
    const { sessions, settled, close } = await registry();
    const served = new RecordingSink();
    sessions.open(stream('served'), served, NODE, first);
    await settled();
    sessions.close(NODE, 'served', 'client closed the stream');
    await settled();
    expect(sessions.session(NODE)?.at).toBe('disconnected');

    // Again a bug the server never lets happen: a Delta first request on a SotW stream, thrown by the new ledger.
    const reconnecting = new RecordingSink();
    sessions.open(stream('reconnecting'), reconnecting, NODE, { protocol: 'delta', typeUrl: CLUSTER, subscribe: [], unsubscribe: [], initialVersions: {}, responseNonce: '', nodeId: NODE });
    await settled();
    expect(reconnecting.ended).toEqual({ code: 'INTERNAL', message: `internal error in the session of ${NODE}: a delta request reached a SotW ledger` });
    expect(reconnecting.sent).toEqual([]);
    expect(sessions.size).toBe(0);
    expect(sessions.streams).toBe(0);
    await close();
  });
});

describe('a serving node whose configuration can no longer be generated', () => {
  it('is ended with NOT_FOUND when its dataplane goes, and its story records the failure with its reason', async () => {
    const moves: TransitionRecord[] = [];
    const { sessions, store, settled, close } = await registry(new SessionScheduler(), { onTransition: (_node, record) => moves.push(record) });
    const sink = new RecordingSink();
    sessions.open(stream('s'), sink, NODE, first);
    await settled();
    expect(sessions.session(NODE)?.at).toBe('serving');

    await store.delete({ type: 'Dataplane', mesh: 'default', name: 'backend-1' });
    sessions.advance(store.projection.revision);
    await settled();
    expect(sink.ended?.code).toBe('NOT_FOUND');
    expect(sessions.size).toBe(0);
    expect(moves.at(-1)).toMatchObject({ event: 'snapshot.failed', from: 'serving', to: 'evicted', detail: { code: 'CHANCERY_MESH_DATAPLANE_NOT_FOUND' } });
    await close();
  });
});
