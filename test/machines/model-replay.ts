import v8 from 'node:v8';
import vm from 'node:vm';
import { pino } from 'pino';
import { Subject } from 'rxjs';
import { expect } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createControlPlane, type ControlPlane, type ResourceStore } from '../../src/index.js';
import type { SessionView } from '../../src/machines/index.js';
import { generate, type NodeCertificate } from '../../src/mesh/index.js';
import { decodeAny, type Protocol, type SessionGateway, type Snapshot, type StreamSink, type TypedRequest } from '../../src/xds/index.js';
import { CLUSTER, ENDPOINT, LISTENER, SECRET } from '../../src/xds/type-urls.js';
import { ScriptedLog } from '../store/scripted-log.js';
import { modelClient, type ModelClient, type ModelStream } from './model-client.js';
import type { ModelEvent, ModelPhase, ModelState } from './session-model.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

export const NODE = 'default.model';
export const GRACE = 10_000;
/** ms on the injected clock that take a 30 s certificate past 2/3 of its life: a renewal. */
const RENEWAL = 17_000;
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
 * Between the xDS server and the sessions (the `sessionGateway` seam): it counts what the
 * sessions send, and hands them each stream's sink wrapped in an object only they hold, so a
 * weak reference to it shows whether they let go of the stream (I3).
 */
class WatchedGateway implements SessionGateway {
  /** Responses the sessions sent, on any stream. */
  sent = 0;
  readonly #sinks: Array<{ readonly stream: string; readonly sink: WeakRef<StreamSink> }> = [];

  constructor(readonly sessions: SessionGateway) {}

  open(...[stream, sink, node, request]: Parameters<SessionGateway['open']>): void {
    const watched: StreamSink = {
      send: (response) => {
        this.sent += 1;
        return sink.send(response);
      },
      end: (status) => sink.end(status),
    };
    this.#sinks.push({ stream: stream.id, sink: new WeakRef(watched) });
    this.sessions.open(stream, watched, node, request);
  }

  request(...args: Parameters<SessionGateway['request']>): void {
    this.sessions.request(...args);
  }

  close(...args: Parameters<SessionGateway['close']>): void {
    this.sessions.close(...args);
  }

  /** The streams whose sinks the sessions still hold: only as true as the last garbage collection. */
  held(): string[] {
    return this.#sinks.filter(({ sink }) => sink.deref() !== undefined).map(({ stream }) => stream);
  }
}

/**
 * I3 for stream sinks, which the sessions keep out of sight: the streams of `replays` (each
 * stopped, with its control plane still referenced) whose sinks the sessions still hold, after
 * a full garbage collection. A sink kept after its stream ended is never let go, so one look
 * after the plane stopped finds every sink any eviction or end left behind; one collection for
 * many replays, as each costs about 100 ms.
 */
export async function sinksStillHeld(replays: Iterable<{ readonly name: string; readonly replay: ModelReplay }>): Promise<string[]> {
  // A weak reference's target lives to the end of the job that made or read it: collect in a later turn.
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  return [...replays].flatMap(({ name, replay }) => replay.gateway.held().map((stream) => `${name}: stream ${stream}`));
}

/**
 * A real control plane made by `createControlPlane` (memory log behind a switch that can make
 * it unreadable, a simulated clock, a hand-driven watchdog) and one Envoy-like node, on which a
 * path through the model is carried out step by step and checked after each.
 */
export class ModelReplay {
  readonly #served = new Set<ModelStream>();
  readonly #closedAt = new Map<ModelStream, number>();
  /** Each stream's id on the server, known once it was handled. */
  readonly #ids = new Map<ModelStream, string>();
  /** The change feed's listeners with no session: the control plane's own. */
  readonly #feedListeners: number;
  #variant = 0;
  #barriers = 0;
  #stopped = false;
  /** Whether the mesh has strict mTLS: the node is sent Secrets, and I8 is checked at every step. */
  #mtls = false;

  private constructor(
    readonly cp: ControlPlane,
    readonly store: ResourceStore,
    readonly gateway: WatchedGateway,
    readonly log: ScriptedLog,
    readonly clock: SimulatedClock,
    readonly watchdog: Subject<void>,
    readonly client: ModelClient,
  ) {
    this.#feedListeners = store.sizes().listeners;
  }

  /** A control plane and a node that speaks `protocol`, in a mesh with strict mTLS when `mtls`. */
  static async start(protocol: Protocol, options: { readonly mtls?: boolean } = {}): Promise<ModelReplay> {
    const log = new ScriptedLog();
    const clock = new SimulatedClock();
    const watchdog = new Subject<void>();
    let gateway: WatchedGateway | undefined;
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
      sessionGateway: (sessions) => (gateway = new WatchedGateway(sessions)),
    });
    await cp.start();
    if (options.mtls === true) {
      await cp.apply({ type: 'Mesh', name: 'default', dataplaneAuth: 'none', mtls: { mode: 'strict', certificateTTL: '30s' } });
      const deadline = Date.now() + SETTLE_MS;
      while (cp.list('CertificateAuthority', 'default').length === 0) {
        if (Date.now() > deadline) throw new Error('the mesh got no CA');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    await cp.apply(modelDataplane(0));
    const replay = new ModelReplay(cp, cp.store, gateway!, log, clock, watchdog, modelClient(protocol, cp.addresses.xds, NODE));
    replay.#mtls = options.mtls === true;
    return replay;
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
        // word before the new one takes over; it must not reach the new stream.
        client.open(before.holds, 'shared');
        old.nack('sent on a superseded stream');
        expect((await old.ending(`status of the superseded stream, at ${where}`, SETTLE_MS)).code, `${where}: the superseded stream's status`).toBe(10);
        this.#closedAt.set(old, old.count);
        // The new stream has taken over; what the old one sends from now on, the server no longer reads.
        this.#lateWords(old, where);
        break;
      }
      case 'late':
        this.#lateWords(client.streams.at(-2)!, where);
        break;
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
      case 'renew': {
        const serial = this.#view()?.certificate?.serial;
        this.clock.increment(RENEWAL);
        await this.#until(() => this.#view()?.certificate?.serial !== serial, Date.now() + SETTLE_MS, () => `${where}: no certificate renewed within ${SETTLE_MS} ms: ${this.#describe()}`);
        break;
      }
      case 'shutdown': {
        const stream = client.current;
        await cp.stop();
        this.#stopped = true;
        if (stream !== undefined && (before.phase === 'generating' || before.phase === 'store-unreadable' || before.phase === 'serving')) {
          expect((await stream.ending(`status of the stream at shutdown, at ${where}`, SETTLE_MS)).code, `${where}: the status of the stream at shutdown`).toBe(14);
          this.#closedAt.set(stream, stream.count);
        }
        break;
      }
    }
    await this.#settle(after, where);
    this.#checkWire(where);
    if (this.#mtls) this.#checkNoMissingSecret(where);
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
   * An earlier stream's late words, delivered to the sessions as the server would report them if
   * it still read that stream (it does not: the server stops reading a stream once it is ended,
   * so on the wire they never arrive): an ACK, a NACK, a new subscription, then its close. They
   * change nothing, at once (I4): the node is served by the same stream, its types and story are
   * as they were, and nothing is sent on any stream.
   */
  #lateWords(stream: ModelStream, where: string): void {
    const id = this.#ids.get(stream);
    if (id === undefined) throw new Error(`${where}: the earlier stream was never handled by the server, so it has no id to speak with`);
    const before = this.#view();
    const sent = this.gateway.sent;
    for (const request of stream.lateWords()) this.gateway.sessions.request(NODE, id, request as TypedRequest);
    this.gateway.sessions.close(NODE, id, 'the earlier stream closed, late');
    const after = this.#view();
    expect(after?.stream?.id, `${where}: the stream serving the node after an earlier stream's late words (I4)`).toBe(before?.stream?.id);
    expect(after?.state, `${where}: the state after an earlier stream's late words (I4)`).toBe(before?.state);
    expect(after?.types, `${where}: the types after an earlier stream's late words (I4)`).toEqual(before?.types);
    expect(after?.transitions, `${where}: the story after an earlier stream's late words (I4)`).toEqual(before?.transitions);
    expect(this.gateway.sent - sent, `${where}: responses sent on account of an earlier stream's late words (I4)`).toBe(0);
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
    if (streaming) this.#ids.set(stream, this.#view()!.stream!.id);
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

  /**
   * I8 on the client's side: every Secret a cluster or listener it holds names, it holds too,
   * with a certificate and key (or CAs) in it: never a name waiting for nothing, never empty.
   */
  #checkNoMissingSecret(where: string): void {
    const named = new Set<string>();
    for (const resource of [...this.client.holds(CLUSTER), ...this.client.holds(LISTENER)]) {
      for (const match of JSON.stringify(resource).matchAll(/"name":"(mtls:[^"]+)","sds_config"/g)) named.add(match[1]!);
    }
    const secrets = new Map(this.client.holds(SECRET).map((secret) => [String(secret['name']), JSON.stringify(secret)]));
    for (const name of named) {
      expect(secrets.has(name), `${where}: a cluster or listener the client holds names Secret ${name}, which it was not sent (I8)`).toBe(true);
      expect(secrets.get(name), `${where}: Secret ${name} holds no certificate (I8)`).toMatch(/BEGIN CERTIFICATE/);
    }
  }

  /** The certificate the client holds, as the generator takes it: from its identity Secret. */
  #heldCertificate(): NodeCertificate | undefined {
    const secret = this.client.holds(SECRET).find((held) => held['name'] === 'mtls:identity') as { tls_certificate?: { certificate_chain: { inline_string: string }; private_key: { inline_string: string } } } | undefined;
    const pair = secret?.tls_certificate;
    if (pair === undefined) return undefined;
    const issuer = this.#view()?.certificate?.issuer ?? 'ca-1';
    return { certificate: pair.certificate_chain.inline_string, privateKey: pair.private_key.inline_string, issuer, spiffeIds: ['spiffe://default/model-svc'] };
  }

  /** The oracle: what the client holds is what the generator makes of the store now (with the certificate it holds), type by type. */
  #checkHoldsStoreConfiguration(where: string): void {
    const result = generate(NODE, this.cp.store.projection, this.#mtls ? this.#heldCertificate() : undefined);
    expect(result.ok, `${where}: the store's configuration for the node`).toBe(true);
    const snapshot = (result as { snapshot: Snapshot }).snapshot;
    const held = (typeUrl: string) => this.client.holds(typeUrl);
    const wildcard = (typeUrl: typeof CLUSTER | typeof LISTENER) => snapshot.types[typeUrl].wildcard.list.map((resource) => decodeAny(resource.any));
    expect(held(CLUSTER), `${where}: the clusters the client holds`).toEqual(wildcard(CLUSTER));
    expect(held(LISTENER), `${where}: the listeners the client holds`).toEqual(wildcard(LISTENER));
    const names = held(CLUSTER).filter((cluster) => cluster['type'] === 'EDS').map((cluster) => String(cluster['name'])).sort();
    const assignments = names.map((name) => decodeAny(snapshot.types[ENDPOINT].get(name)!.any));
    expect(held(ENDPOINT), `${where}: the endpoints the client holds`).toEqual(assignments);
    if (this.#mtls) expect(held(SECRET), `${where}: the Secrets the client holds`).toEqual(snapshot.types[SECRET].wildcard.list.map((resource) => decodeAny(resource.any)));
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

  /**
   * I3: an evicted session (or a stopped plane) leaves no session, no stream or connection
   * entry, no timer, no listener on the change feed and no metric series behind (and no stream
   * sink: `sinksStillHeld`).
   */
  async #checkNothingLeft(where: string): Promise<void> {
    expect(this.cp.listSessions(), `${where}: sessions left`).toEqual([]);
    expect(this.cp.sizes(), `${where}: the control plane's per-node and per-stream tables`).toEqual({ sessions: 0, sinks: 0, streams: 0, gates: 0, connections: 0, admitting: 0 });
    const listeners = this.#stopped ? 0 : this.#feedListeners;
    expect(this.store.sizes(), `${where}: listeners on the change feed and callers waiting on it`).toEqual({ listeners, refreshes: 0 });
    const timers = (this.clock as unknown as { timeouts: Map<unknown, unknown> }).timeouts;
    expect(timers.size, `${where}: session timers left on the clock`).toBe(0);
    const metrics = await this.cp.metrics.text();
    expect(metrics, `${where}: a metric naming the node`).not.toContain(NODE);
    const sessions = metrics.split('\n').filter((line) => line.startsWith('chancery_sessions{'));
    expect(sessions.length, `${where}: the sessions gauge`).toBeGreaterThan(0);
    for (const line of sessions) expect(line, `${where}: sessions counted`).toMatch(/ 0$/);
  }
}
