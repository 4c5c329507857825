import { getShortestPaths, getSimplePaths, type StatePath } from '@xstate/graph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { __unsafe_getAllOwnEventDescriptors, type SnapshotFrom } from 'xstate';
import type { SessionEvent } from '../../src/machines/session-events.js';
import { sessionMachine, type SessionMachine } from '../../src/machines/session-machine.js';
import type { SessionView } from '../../src/machines/session-view.js';
import { generate, validate } from '../../src/mesh/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import type { Snapshot } from '../../src/xds/snapshot.js';
import { CLUSTER, LISTENER, ROUTE } from '../../src/xds/type-urls.js';
import { AdsStream } from '../support/ads-client.js';
import { HELD, startGatedPlane, type GatedPlane } from './gated-plane.js';

type ModelSnapshot = SnapshotFrom<SessionMachine>;
type ModelPath = StatePath<ModelSnapshot, SessionEvent>;

const NODE = 'default.model';
const GRACE = 10_000;
const GONE = 'CHANCERY_MESH_DATAPLANE_NOT_FOUND';

/** The node's Dataplane; `variant` flips its outbound so a regeneration is a real change. */
function modelDataplane(variant: number) {
  return {
    type: 'Dataplane',
    mesh: 'default',
    name: 'model',
    networking: {
      address: '127.0.0.1',
      inbound: [{ port: 10001, servicePort: 9001, tags: { service: 'model-svc' } }],
      outbound: [{ port: 20001, service: variant % 2 === 0 ? 'upstream-a' : 'upstream-b' }],
    },
  };
}
// Whatever the variant, the node's configuration always has these: no LDS/CDS response may lack them.
const ALWAYS = { [LISTENER]: 'inbound:127.0.0.1:10001', [CLUSTER]: 'localhost:9001' } as const;

/** A real snapshot for the model's `snapshot.generated` events. */
async function sampleSnapshot(): Promise<Snapshot> {
  const store = createMemoryStore({ instance: 'sample' });
  await store.start();
  const parsed = validate(modelDataplane(0));
  if (!parsed.ok) throw new Error('model dataplane is invalid');
  await store.put(parsed.resource);
  const result = generate(NODE, store.projection);
  await store.close();
  if (!result.ok) throw result.error;
  return result.snapshot;
}

const sample = await sampleSnapshot();

/** Every event the model may take from a state, with payloads consistent with its context. */
function eventsFor(snapshot: ModelSnapshot): SessionEvent[] {
  const { phase, attempted } = snapshot.context;
  const current = 'stream' in phase ? phase.stream.id : undefined;
  const next = `s${streamNumber(snapshot) + 1}`;
  const revision = attempted + 1;
  const events: SessionEvent[] = [
    {
      type: 'stream.opened',
      at: 0,
      stream: { id: next, peer: 'model', openedAt: 0 },
      request: { typeUrl: CLUSTER, versionInfo: '', resourceNames: [], responseNonce: '', nodeId: NODE },
    },
    { type: 'snapshot.generated', at: 0, snapshot: sample },
    { type: 'snapshot.failed', at: 0, revision, error: { code: HELD, message: 'held' } },
    { type: 'snapshot.failed', at: 0, revision, error: { code: GONE, message: 'gone' } },
    { type: 'store.advanced', at: 0, revision },
    { type: 'watchdog.ticked', at: 0, revision: attempted },
    { type: 'shutdown.requested', at: 0, reason: 'model' },
  ];
  // The registry creates a session with the first request of a stream: nothing else reaches `connecting`.
  if (phase.state === 'connecting') return events.slice(0, 1);
  if (current) {
    const request = { typeUrl: LISTENER, versionInfo: '', resourceNames: [], responseNonce: '' } as const;
    events.push(
      { type: 'xds.requested', at: 0, streamId: current, request },
      { type: 'xds.acked', at: 0, streamId: current, request: { ...request, typeUrl: CLUSTER, responseNonce: '1' } },
      {
        type: 'xds.nacked',
        at: 0,
        streamId: current,
        request: { ...request, typeUrl: CLUSTER, responseNonce: '1', errorDetail: { code: 3, message: 'rejected by the model' } },
      },
      { type: 'stream.closed', at: 0, streamId: current, reason: 'model' },
    );
  }
  for (const type of __unsafe_getAllOwnEventDescriptors(snapshot)) {
    if (type.startsWith('xstate.after.')) events.push({ type } as unknown as SessionEvent);
  }
  return events;
}

function streamNumber(snapshot: ModelSnapshot): number {
  const { phase } = snapshot.context;
  const stream = 'stream' in phase ? phase.stream : phase.state === 'disconnected' ? phase.lastStream : undefined;
  return stream ? Number(stream.id.slice(1)) : 0;
}

function describeEvent(event: SessionEvent): string {
  if (event.type === 'snapshot.failed') return `${event.type}(${event.error.code === GONE ? 'dataplane gone' : 'held'})`;
  if (event.type.startsWith('xstate.after.')) return 'eviction grace elapsed';
  return event.type;
}

const traversal = {
  input: { node: NODE, evictionGrace: GRACE },
  events: eventsFor,
  // `evicted` is final: nothing happens to a session after it.
  stopWhen: (state: ModelSnapshot) => state.status === 'done',
  serializeEvent: (event: SessionEvent) =>
    event.type === 'snapshot.failed' ? `${event.type}:${event.error.code}` : event.type,
};

/** Every path worth replaying: one through each transition (state, event, next state), and every simple path through the states. */
function modelPaths(): ModelPath[] {
  const byTransition = getShortestPaths(sessionMachine, {
    ...traversal,
    serializeState: (state, event, previous) =>
      `${JSON.stringify(previous?.value)} --${event ? traversal.serializeEvent(event) : 'init'}--> ${JSON.stringify(state.value)}`,
  });
  // Every state again on a second stream: reconnects and superseding streams served afresh.
  const secondStream = getShortestPaths(sessionMachine, {
    ...traversal,
    serializeState: (state) => `${JSON.stringify(state.value)} on stream ${Math.min(streamNumber(state), 2)}`,
  });
  const simple = getSimplePaths(sessionMachine, { ...traversal, serializeState: (state) => JSON.stringify(state.value) });
  const unique = new Map<string, ModelPath>();
  for (const path of [...byTransition, ...secondStream, ...simple]) {
    const key = path.steps.map((step) => traversal.serializeEvent(step.event)).join(' > ');
    unique.set(key, path);
  }
  return [...unique.values()].filter((path) => path.steps.length > 1);
}

/** Replays a model path against the real server, checking the invariants after every step. */
class Replay {
  readonly streams: AdsStream[] = [];
  readonly #closedAt = new Map<AdsStream, number>();
  readonly #served = new Set<AdsStream>();
  #current: AdsStream | undefined;
  #variant = 0;
  #barriers = 0;
  #others = 0;
  #dataplane = true;
  #stopped = false;

  constructor(readonly plane: GatedPlane) {}

  async step(event: SessionEvent, expected: string): Promise<void> {
    const { plane } = this;
    switch (event.type) {
      case 'stream.opened': {
        const stream = AdsStream.open(plane.xds);
        stream.send({ typeUrl: CLUSTER, nodeId: NODE });
        this.streams.push(stream);
        this.#current = stream;
        break;
      }
      case 'xds.requested':
        this.#current!.send({ typeUrl: LISTENER });
        break;
      case 'xds.acked': {
        const last = [...this.#current!.responses].reverse().find((r) => r.typeUrl === CLUSTER);
        if (last) this.#current!.ack(last);
        else this.#current!.send({ typeUrl: CLUSTER, responseNonce: 'unsent' });
        break;
      }
      case 'xds.nacked': {
        const last = [...this.#current!.responses].reverse().find((r) => r.typeUrl === CLUSTER);
        this.#current!.send({
          typeUrl: CLUSTER,
          responseNonce: last?.nonce ?? 'unsent',
          errorDetail: { code: 3, message: 'rejected by the model' },
        });
        break;
      }
      case 'stream.closed': {
        const stream = this.#current!;
        stream.close();
        this.#closedAt.set(stream, stream.responses.length);
        this.#current = undefined;
        break;
      }
      case 'snapshot.generated':
        plane.gate = 'open';
        await plane.apply(modelDataplane(++this.#variant));
        this.#dataplane = true;
        plane.gate = 'shut';
        break;
      case 'snapshot.failed':
        if (event.error.code === GONE) {
          plane.gate = 'open';
          if (this.#dataplane) await plane.store.delete({ type: 'Dataplane', mesh: 'default', name: 'model' });
          else await this.#touchStore();
          this.#dataplane = false;
          plane.gate = 'shut';
        } else {
          await this.#touchStore();
        }
        break;
      case 'store.advanced':
        await this.#touchStore();
        break;
      case 'watchdog.ticked':
        plane.registry.tick();
        break;
      case 'shutdown.requested': {
        await plane.stop();
        this.#stopped = true;
        const open = this.#current;
        if (open) expect((await open.ending()).code).toBe(14);
        this.#current = undefined;
        break;
      }
      default:
        plane.clock.increment(GRACE);
    }
    if (!this.#stopped) await this.#settle(expected);
    this.#checkStreams(expected);
  }

  close(): Promise<void> {
    for (const stream of this.streams) stream.close();
    return this.#stopped ? Promise.resolve() : this.plane.stop();
  }

  async #touchStore(): Promise<void> {
    await this.plane.apply({ type: 'Dataplane', mesh: 'default', name: `other-${++this.#others}`, networking: { address: '127.0.0.1' } });
  }

  async #view(): Promise<SessionView | undefined> {
    const response = await fetch(`http://${this.plane.api}/sessions/${NODE}`);
    if (response.status === 404) return undefined;
    return (await response.json()) as SessionView;
  }

  /** Waits until the server has processed everything sent so far, then checks its state. */
  async #settle(expected: string): Promise<void> {
    const stream = this.#current;
    const live = expected === 'awaiting-snapshot' || expected === 'serving';
    const barrier = `barrier-${++this.#barriers}`;
    // Requests on one stream are handled in order: once the barrier is recorded, so is all before it.
    if (stream && live) stream.send({ typeUrl: ROUTE, resourceNames: [barrier] });
    let view: SessionView | undefined;
    for (let attempt = 0; ; attempt++) {
      view = await this.#view();
      const state = view?.state ?? 'evicted';
      const arrived = !stream || !live || view?.types.RDS?.subscription.names.includes(barrier);
      if (state === expected && arrived) break;
      if (attempt > 500) expect.fail(`server stayed ${state} (barrier ${arrived ? 'seen' : 'unseen'}); the model expected ${expected}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    // Every response the server recorded as sent has reached the client before we judge it.
    if (stream && view) {
      for (const status of Object.values(view.types)) {
        const nonce = status.sent?.nonce;
        if (nonce) await stream.until(() => stream.responses.some((r) => r.nonce === nonce), `nonce ${nonce}`);
      }
    }
    expect(view?.state ?? 'evicted').toBe(expected);
  }

  #checkStreams(expected: string): void {
    if (expected === 'serving' && this.#current) this.#served.add(this.#current);
    for (const stream of this.streams) {
      // I1: no response on a stream the node was never served on.
      if (!this.#served.has(stream)) expect(stream.responses, 'a response before any snapshot was generated').toHaveLength(0);
      // Nothing is written to a stream after it closed.
      const closedAt = this.#closedAt.get(stream);
      if (closedAt !== undefined) expect(stream.responses.length, 'a response after close').toBe(closedAt);
      // No LDS/CDS response drops what the node's configuration always has.
      for (const response of stream.responses) {
        const must = ALWAYS[response.typeUrl as keyof typeof ALWAYS];
        if (must) expect(response.resources.map((r) => r['name'])).toContain(must);
      }
    }
  }
}

const paths = modelPaths();

describe('the session chart, replayed against the real server', () => {
  it('walks every state of the chart', () => {
    const reached = new Set(paths.map((path) => path.state.value));
    expect([...reached].sort()).toEqual(['awaiting-snapshot', 'disconnected', 'evicted', 'serving']);
  });

  describe.each(paths.map((path) => [path.steps.slice(1).map((s) => describeEvent(s.event)).join(' → '), path] as const))(
    'path %s',
    (_name, path) => {
      let replay: Replay;
      beforeAll(async () => {
        replay = new Replay(await startGatedPlane(GRACE));
        await replay.plane.apply(modelDataplane(0));
      });
      afterAll(() => replay.close());

      it('reaches every state the model reaches, with no push the invariants forbid', async () => {
        for (const step of path.steps.slice(1)) {
          await replay.step(step.event, step.state.value as string);
        }
      });
    },
  );
});

describe('a node id that names no Dataplane', () => {
  it('is refused with INVALID_ARGUMENT and leaves no session', async () => {
    const plane = await startGatedPlane(GRACE);
    const stream = AdsStream.open(plane.xds);
    stream.send({ typeUrl: CLUSTER, nodeId: 'nodot' });
    const end = await stream.ending();
    expect(end.code).toBe(3);
    expect(end.details).toContain('nodot');
    expect(plane.registry.size).toBe(0);
    expect(stream.responses).toHaveLength(0);
    stream.close();
    await plane.stop();
  });
});
