import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { generate, validate } from '../../src/mesh/index.js';
import { SessionRegistry, SessionScheduler, SessionViews } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import type { EndStatus, StreamSink, XdsResponse } from '../../src/xds/index.js';
import { CLUSTER, LISTENER } from '../../src/xds/type-urls.js';
import { BACKEND } from '../xds/fixtures.js';

/** A stream writer that keeps what it is told. */
class RecordingSink implements StreamSink {
  readonly sent: XdsResponse[] = [];
  ended: EndStatus | undefined;
  send(response: XdsResponse): number {
    this.sent.push(response);
    return 1;
  }
  end(status: EndStatus): void {
    this.ended = status;
  }
}

async function registry(scheduler = new SessionScheduler()) {
  const store = createMemoryStore({ instance: 'registry' });
  await store.start();
  const parsed = validate(BACKEND);
  if (!parsed.ok) throw new Error('fixture is invalid');
  await store.put(parsed.resource);
  const sessions = new SessionRegistry({
    instanceId: 'registry',
    evictionGrace: 10_000,
    generate: (node) => {
      const result = generate(node, store.projection);
      return result.ok ? result : { ok: false, error: { code: result.error.code, message: result.error.message } };
    },
    revision: () => store.projection.revision,
    catchUp: () => store.refresh(),
    now: () => 0,
    clock: new SimulatedClock(),
    scheduler,
    logger: pino({ level: 'silent' }),
  });
  // What the server reports is carried out in order, in this turn or, once its slice is spent, in later ones.
  return { sessions, views: new SessionViews(sessions, 'registry'), settled: () => scheduler.settled('requests'), close: () => store.close() };
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
    sessions.open(stream('new'), newer, NODE, first);
    await settled();
    expect(older.ended?.code).toBe('ABORTED');
    expect(newer.sent.map((response) => response.typeUrl)).toEqual([CLUSTER]);
    const before = views.get(NODE);

    // The old stream's last words, as a client that has not yet heard of its end would send them.
    const nonce = older.sent[0]!.nonce;
    sessions.request(NODE, 'old', 'xds.nacked', { ...first, responseNonce: nonce, errorDetail: { code: 3, message: 'from the old stream' } });
    sessions.request(NODE, 'old', 'xds.acked', { ...first, versionInfo: 'whatever it held', responseNonce: nonce });
    sessions.request(NODE, 'old', 'xds.requested', { protocol: 'sotw', typeUrl: LISTENER, versionInfo: '', resourceNames: [], responseNonce: '' });
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
