import { pino } from 'pino';
import { Subject } from 'rxjs';
import { expect } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createControlPlane, type ControlPlane } from '../../src/index.js';
import type { SessionView } from '../../src/machines/index.js';
import { generate } from '../../src/mesh/index.js';
import { decodeAny, type Protocol, type Snapshot } from '../../src/xds/index.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import { ScriptedLog } from '../store/scripted-log.js';
import { modelClient, type ModelClient, type ModelStream } from './model-client.js';
import type { ModelEvent, ModelPhase, ModelState } from './session-model.js';

export const NODE = 'default.model';
export const GRACE = 10_000;
/** How long a step may take to settle: a session is answered within this, or the step fails saying why. */
const SETTLE_MS = 3_000;
const KEY = { type: 'Dataplane', mesh: 'default', name: 'model' } as const;

/** The node's Dataplane; each `variant` calls another of three services, so every write (and any two) changes CDS, EDS and LDS. */
function modelDataplane(variant: number) {
  return {
    type: 'Dataplane',
    mesh: 'default',
    name: 'model',
    networking: {
      address: '127.0.0.1',
      inbound: [{ port: 10001, servicePort: 9001, tags: { service: 'model-svc' } }],
      outbound: [{ port: 20001, service: ['upstream-a', 'upstream-b', 'upstream-c'][variant % 3] }],
    },
  };
}
// Whatever the variant, the node's configuration has these: no LDS or CDS response may lack them (I1).
const ALWAYS: Readonly<Record<string, string>> = { [LISTENER]: 'inbound:127.0.0.1:10001', [CLUSTER]: 'localhost:9001' };

/** The chart state the server reports, in the model's terms; `catching-up` is only ever passed through. */
function phaseOf(view: SessionView | undefined): ModelPhase | 'catching-up' | 'connecting' {
  if (view === undefined) return 'evicted';
  if (view.state !== 'awaiting-snapshot') return view.state === 'evicted' ? 'evicted' : view.state;
  return view.step === 'generating' || view.step === 'store-unreadable' ? view.step : 'catching-up';
}

/** `none` and `evicted` look alike from outside: no session. */
const outside = (phase: ModelPhase): ModelPhase => (phase === 'none' ? 'evicted' : phase);

/**
 * A real control plane made by `createControlPlane` (memory log behind a switch that can make
 * it unreadable, a simulated clock, a hand-driven watchdog) and one Envoy-like node, on which a
 * path through the model is carried out step by step and checked after each.
 */
export class ModelReplay {
  readonly #served = new Set<ModelStream>();
  readonly #closedAt = new Map<ModelStream, number>();
  #variant = 0;
  #barriers = 0;
  #stopped = false;

  private constructor(
    readonly cp: ControlPlane,
    readonly log: ScriptedLog,
    readonly clock: SimulatedClock,
    readonly watchdog: Subject<void>,
    readonly client: ModelClient,
  ) {}

  /** A control plane and a node that speaks `protocol`. */
  static async start(protocol: Protocol): Promise<ModelReplay> {
    const log = new ScriptedLog();
    const clock = new SimulatedClock();
    const watchdog = new Subject<void>();
    const cp = createControlPlane({
      xdsAddress: '127.0.0.1:0',
      apiAddress: false,
      store: log,
      instanceId: 'model',
      evictionGrace: GRACE,
      logger: pino({ level: process.env.CHANCERY_TEST_LOG_LEVEL ?? 'silent' }),
      watchdog,
      recordTicks: new Subject<void>(),
      clock,
    });
    await cp.start();
    await cp.apply(modelDataplane(0));
    return new ModelReplay(cp, log, clock, watchdog, modelClient(protocol, cp.addresses.xds, NODE));
  }

  /** Carries out `event` and checks that the server rests where the model says, with the invariants holding. */
  async step(event: ModelEvent, before: ModelState, after: ModelState, where: string): Promise<void> {
    const { client, cp } = this;
    switch (event.type) {
      case 'connect':
        client.forget();
        client.open(false);
        break;
      case 'reconnect':
        client.open(true);
        break;
      case 'supersede': {
        const old = client.current!;
        // On one connection, in one turn: the new stream's first requests, then a NACK on the old
        // one. grpc-js hands the server the old stream's data first, so it is the old stream's last
        // word; it must not reach the new stream. (Requests arriving after the supersede cannot be
        // made to on the wire: test/sessions/session-registry.test.ts sends them to the registry.)
        client.open(before.holds, 'shared');
        old.nack('sent on a superseded stream');
        expect((await old.ending()).code, `${where}: the superseded stream's status`).toBe(10);
        this.#closedAt.set(old, old.count);
        break;
      }
      case 'close': {
        const stream = client.current!;
        stream.cancel();
        this.#closedAt.set(stream, stream.count);
        break;
      }
      case 'ack':
        client.current!.ackAgain();
        break;
      case 'nack':
        client.current!.nack('rejected by the model');
        break;
      case 'request':
        client.current!.requestAgain();
        break;
      case 'write':
        await cp.apply(modelDataplane(++this.#variant));
        break;
      case 'delete':
        await cp.delete(KEY);
        break;
      case 'create':
        await cp.apply(modelDataplane(this.#variant));
        break;
      case 'storeDown':
        this.log.failure = new Error('the model made the store unreadable');
        break;
      case 'storeUp':
        this.log.failure = undefined;
        break;
      case 'tick':
        this.watchdog.next();
        break;
      case 'grace':
        this.clock.increment(GRACE);
        break;
      case 'shutdown': {
        const stream = client.current;
        await cp.stop();
        this.#stopped = true;
        if (stream !== undefined && (before.phase === 'generating' || before.phase === 'store-unreadable' || before.phase === 'serving')) {
          expect((await stream.ending()).code, `${where}: the status of the stream at shutdown`).toBe(14);
          this.#closedAt.set(stream, stream.count);
        }
        break;
      }
    }
    await this.#settle(after, where);
    this.#checkWire(where);
    if (after.phase === 'serving') this.#checkHoldsStoreConfiguration(where);
    if (event.type === 'supersede' && after.phase !== 'stopped') {
      // The superseded stream's NACK changed nothing for the stream that owns the node now (I4).
      const nacked = Object.values(this.#view()?.types ?? {}).filter((type) => type.nacked !== undefined);
      expect(nacked, `${where}: a NACK from the superseded stream`).toEqual([]);
    }
    if (event.type === 'nack' && this.client.current!.count > 0) {
      const nacked = Object.values(this.#view()?.types ?? {}).map((type) => type.nacked?.message);
      expect(nacked, `${where}: the NACK`).toContain('rejected by the model');
    }
    if (after.phase === 'evicted' || after.phase === 'stopped') await this.#checkNothingLeft(where);
  }

  async close(): Promise<void> {
    this.client.close();
    if (!this.#stopped) await this.cp.stop();
  }

  #view(): SessionView | undefined {
    return this.#stopped ? undefined : this.cp.session(NODE);
  }

  /**
   * Waits until the server rests where the model says and the conversation is over: the server
   * has handled everything the client sent (a barrier request on the stream, handled in order),
   * and the client has answered every response, round after round until one brings nothing new
   * (an EDS request Envoy sends after new clusters, and its answer). Nothing is written to the
   * store and no tick is sent meanwhile: a session that needed either fails here (I2).
   */
  async #settle(expected: ModelState, where: string): Promise<void> {
    const phase = outside(expected.phase);
    const deadline = Date.now() + SETTLE_MS;
    const stream = this.client.current;
    const streaming = !this.#stopped && stream !== undefined && !this.#closedAt.has(stream) && (phase === 'generating' || phase === 'store-unreadable' || phase === 'serving');
    for (;;) {
      const seen = stream?.count ?? 0;
      if (streaming) await this.#barrier(where, deadline);
      await this.#until(() => {
        const view = this.#view();
        const now = this.#stopped ? 'stopped' : phaseOf(view);
        return now === phase && (phase !== 'serving' || this.#answeredAll(view!));
      }, deadline, () => `${where}: the server did not rest in ${phase} within ${SETTLE_MS} ms, with no store write or tick to help it (I2): ${this.#describe()}`);
      if (!streaming || stream.count === seen) break;
    }
    if (phase === 'serving') this.#served.add(stream!);
  }

  #describe(): string {
    const view = this.#view();
    return view === undefined ? 'no session' : `state ${view.state}${view.step ? `/${view.step}` : ''}, types ${JSON.stringify(view.types)}`;
  }

  async #until(condition: () => boolean, deadline: number, failure: () => string): Promise<void> {
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(failure());
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  /** Sends a barrier on the current stream and waits until the server shows it handled. */
  async #barrier(where: string, deadline: number): Promise<void> {
    const name = `barrier-${++this.#barriers}`;
    this.client.current!.barrier(name);
    await this.#until(() => this.#view()?.types['RDS']?.subscription.names.includes(name) === true, deadline, () => `${where}: the server did not handle the client's requests within ${SETTLE_MS} ms: ${this.#describe()}`);
  }

  #answeredAll(view: SessionView): boolean {
    const stream = this.client.current;
    if (stream === undefined) return false;
    return Object.values(view.types).every((type) => type.sent === undefined || type.sent.nonce === '' || stream.answered.has(type.sent.nonce));
  }

  /** The oracle: what the client holds is what the generator makes of the store now, type by type. */
  #checkHoldsStoreConfiguration(where: string): void {
    const result = generate(NODE, this.cp.store.projection);
    expect(result.ok, `${where}: the store's configuration for the node`).toBe(true);
    const snapshot = (result as { snapshot: Snapshot }).snapshot;
    const held = (typeUrl: string) => this.client.holds(typeUrl);
    const wildcard = (typeUrl: typeof CLUSTER | typeof LISTENER) => snapshot.types[typeUrl].wildcard.list.map((resource) => decodeAny(resource.any));
    expect(held(CLUSTER), `${where}: the clusters the client holds`).toEqual(wildcard(CLUSTER));
    expect(held(LISTENER), `${where}: the listeners the client holds`).toEqual(wildcard(LISTENER));
    const names = held(CLUSTER).filter((cluster) => cluster['type'] === 'EDS').map((cluster) => String(cluster['name'])).sort();
    const assignments = names.map((name) => decodeAny(snapshot.types[ENDPOINT].get(name)!.any));
    expect(held(ENDPOINT), `${where}: the endpoints the client holds`).toEqual(assignments);
  }

  /**
   * I1 and the stream rules, on the wire: no response before a stream was served, none after it
   * ended, none taking away what the configuration always has (a SotW LDS/CDS response lacking
   * it, a Delta response removing it).
   */
  #checkWire(where: string): void {
    for (const stream of this.client.streams) {
      const { sent } = stream;
      if (!this.#served.has(stream)) expect(sent, `${where}: a response on a stream that was never served (I1)`).toHaveLength(0);
      const closedAt = this.#closedAt.get(stream);
      if (closedAt !== undefined) expect(sent.length, `${where}: a response after the stream ended`).toBe(closedAt);
      for (const response of sent) {
        const must = ALWAYS[response.typeUrl];
        if (must === undefined) continue;
        if (this.client.protocol === 'sotw') expect(response.names, `${where}: a ${response.typeUrl} response without ${must} (I1)`).toContain(must);
        expect(response.removed, `${where}: a ${response.typeUrl} response removing ${must} (I1)`).not.toContain(must);
      }
    }
  }

  /** I3: an evicted session (or a stopped plane) leaves no session, no timer and no metric series behind. */
  async #checkNothingLeft(where: string): Promise<void> {
    expect(this.cp.listSessions(), `${where}: sessions left`).toEqual([]);
    const timers = (this.clock as unknown as { timeouts: Map<unknown, unknown> }).timeouts;
    expect(timers.size, `${where}: session timers left on the clock`).toBe(0);
    const metrics = await this.cp.metrics.text();
    expect(metrics, `${where}: a metric naming the node`).not.toContain(NODE);
    const sessions = metrics.split('\n').filter((line) => line.startsWith('chancery_sessions{'));
    expect(sessions.length, `${where}: the sessions gauge`).toBeGreaterThan(0);
    for (const line of sessions) expect(line, `${where}: sessions counted`).toMatch(/ 0$/);
  }
}
