/**
 * A bench child process playing Envoy dataplanes over real gRPC (ADS, State of the World or
 * Delta), as Envoy does: each node's stream on its own HTTP/2 connection (or, as an option,
 * `streamsPerConnection` streams sharing one). It speaks gRPC over Node's own HTTP/2 client
 * rather than a grpc-js channel, so that a fleet costs less CPU than the server it measures; a
 * bench spreads a large fleet over several of these processes (support/fleet-group.ts).
 *
 * Each fake Envoy subscribes to CDS (with its node id) and LDS as wildcards, ACKs every
 * response, and asks for the rest by name as Envoy does, once a response names them: EDS by the
 * names of its clusters and SDS by its two Secrets (a strict mesh) once it has clusters, RDS by
 * its outbounds' RouteConfigurations (HTTP outbounds) once it has listeners. The names come from
 * the mesh's shape (mesh-shape.ts) as the generator makes them, rather than from the responses:
 * a fake Envoy does not decode resources, which would cost more CPU than the server under test.
 * It records when each node was first served and when it ACKed the first new version after a
 * change, on the monotonic clock the server shares.
 *
 * Armed for a failover (`armReconnect`, State of the World), a fake Envoy whose stream ends
 * opens a new one to another address at once, as Envoy does: the first request of each type it
 * watches names the version it holds, so the server may skip re-sending wildcard CDS and LDS.
 */
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET } from '../src/xds/type-urls.js';
import { monotonicMs, serveCommands } from './support/child-link.js';
import { ADS_PATHS, readResponseHeader, requestTemplate, type RequestTemplate, type ResponseHeader, type WireProtocol } from './support/discovery-wire.js';
import { framed, MessageReader } from './support/grpc-frames.js';
import { endpointNames, nodeId, routeNames, secretNames, type MeshShape } from './support/mesh-shape.js';
import { noTraffic, type ShortType, type Traffic } from './support/traffic.js';

export type { ShortType, Traffic };

/** Envoy's ADS retry back-off base, as `chancery bootstrap envoy` sets it; a first retry waits a random part of it. */
const RETRY_BASE_MS = 250;
const MAX_RETRIES = 5;

const SHORT: Record<string, ShortType> = { [CLUSTER]: 'CDS', [ENDPOINT]: 'EDS', [LISTENER]: 'LDS', [ROUTE]: 'RDS', [SECRET]: 'SDS' };

export interface ConnectResult {
  /** Monotonic ms when the fleet started opening streams. */
  readonly startedAt: number;
  /** Monotonic ms when the last stream was opened (the loop's end). */
  readonly openedAt: number;
  /** Per node, monotonic ms when it held CDS and LDS, and RDS and SDS when its mesh has them. */
  readonly served: Float64Array;
  /** Per node, monotonic ms when it also held EDS (and had ACKed everything so far). */
  readonly complete: Float64Array;
  /** Streams opened again after their connection was reset before the node was served. */
  readonly retried: number;
  readonly traffic: Traffic;
}

export interface ChangeResult {
  /** Per node, monotonic ms when it ACKed the first new version of the watched type. */
  readonly acked: Float64Array;
  /** What arrived between `expectChange` and the last ACK. */
  readonly traffic: Traffic;
}

export interface FailoverResult {
  /** Per node, monotonic ms: when its stream ended, when it opened the new one, its first response on it, and its EDS on it. */
  readonly ended: Float64Array;
  readonly reopened: Float64Array;
  readonly firstResponse: Float64Array;
  readonly served: Float64Array;
  /** Per node, the HTTP/2 connection (of `streamsPerConnection` streams) it reconnected on. */
  readonly connection: Int32Array;
  /** Nodes the new stream re-sent CDS, or LDS, to (zero when the version they named was current). */
  readonly resent: { readonly CDS: number; readonly LDS: number };
  readonly traffic: Traffic;
}

export interface ConnectArgs {
  readonly address: string;
  readonly shape: MeshShape;
  /** Default: every node of `shape`. */
  readonly nodes?: { readonly first: number; readonly count: number };
  readonly streamsPerConnection: number;
  /** Default `sotw`. */
  readonly protocol?: WireProtocol;
  readonly timeoutMs: number;
}

export type FleetApi = {
  /** Opens a stream for each of `nodes` and waits until all are served. */
  connect: { args: ConnectArgs; result: ConnectResult };
  /** From now on, a stream that ends reconnects to `address` after a random delay under `spreadMs` (0: at once). */
  armReconnect: { args: { address: string; spreadMs: number }; result: null };
  /** Waits until every node has EDS on its new stream; a stream ending after reconnecting fails it. */
  awaitFailover: { args: { timeoutMs: number }; result: FailoverResult };
  /**
   * Remembers each node's current version of `type`; a different one counts as the change. The
   * traffic counted so far is dropped, unless `keepTraffic` (a change written during a storm,
   * whose traffic the storm's count includes).
   */
  expectChange: { args: { type: ShortType; keepTraffic?: boolean }; result: null };
  awaitChange: { args: { timeoutMs: number }; result: ChangeResult };
  /** How many nodes hold every type they need now, while a `connect` is still waiting. */
  progress: { args: null; result: { complete: number } };
  usage: { args: null; result: { cpuMs: number; heapUsed: number; rss: number } };
  close: { args: null; result: null };
};

const header: ResponseHeader = { version: '', typeUrl: '', nonce: '' };

/** The requests one protocol's fake Envoys send, for the types every node watches as wildcards. */
class Wildcards {
  readonly cds: RequestTemplate;
  readonly lds: RequestTemplate;

  constructor(readonly protocol: WireProtocol) {
    this.cds = requestTemplate(protocol, CLUSTER);
    this.lds = requestTemplate(protocol, LISTENER);
  }
}

/** One HTTP/2 connection to the server, for one node's stream or several. */
function openConnection(address: string): ClientHttp2Session {
  const session = connect(`http://${address}`);
  // A failover kills the server under the connection; its streams report what they lost, and why.
  session.on('error', (error: Error) => sessionErrors.set(session, error.message));
  return session;
}

/** Why a connection failed, for the message of a stream it ended. */
const sessionErrors = new WeakMap<ClientHttp2Session, string>();

/** A type an Envoy asks for by name, once a response of another type names those resources. */
interface NamedSubscription {
  readonly type: ShortType;
  readonly namedBy: ShortType;
  readonly requests: RequestTemplate;
}

/** What node `index` asks for by name: EDS and SDS once its clusters name them, RDS once its listeners do; a type it has no name of, never. */
function namedSubscriptions(protocol: WireProtocol, index: number, shape: MeshShape): NamedSubscription[] {
  const named = [
    { type: 'EDS', namedBy: 'CDS', typeUrl: ENDPOINT, names: endpointNames(index, shape) },
    { type: 'SDS', namedBy: 'CDS', typeUrl: SECRET, names: secretNames(shape) },
    { type: 'RDS', namedBy: 'LDS', typeUrl: ROUTE, names: routeNames(index, shape) },
  ] as const;
  return named.filter(({ names }) => names.length > 0).map(({ type, namedBy, typeUrl, names }) => ({ type, namedBy, requests: requestTemplate(protocol, typeUrl, names) }));
}

/** One fake Envoy: its stream and what it has been sent. */
class FakeEnvoy {
  #stream: ClientHttp2Stream;
  readonly #named: readonly NamedSubscription[];
  /** The requests of every type it watches, by type: how it ACKs a response. */
  readonly #requests: ReadonlyMap<ShortType, RequestTemplate>;
  readonly versions: Record<ShortType, string> = { CDS: '', EDS: '', LDS: '', RDS: '', SDS: '' };
  servedAt = Number.NaN;
  completeAt = Number.NaN;
  baseline = '';
  changeAckedAt = Number.NaN;
  // The failover: when the stream ended, the new one opened, its first response and its EDS, and its responses per type.
  endedAt = Number.NaN;
  reopenedAt = Number.NaN;
  firstResponseAt = Number.NaN;
  reservedAt = Number.NaN;
  /** Streams opened again because the connection failed before the node was first served. */
  retries = 0;
  sinceReconnect: Record<ShortType, number> = { CDS: 0, EDS: 0, LDS: 0, RDS: 0, SDS: 0 };

  constructor(
    readonly index: number,
    /** Which of the fleet's HTTP/2 connections it uses. */
    readonly connection: number,
    session: ClientHttp2Session,
    readonly fleet: Fleet,
    readonly wildcards: Wildcards,
    shape: MeshShape,
  ) {
    this.#named = namedSubscriptions(wildcards.protocol, index, shape);
    this.#requests = new Map([['CDS', wildcards.cds], ['LDS', wildcards.lds], ...this.#named.map(({ type, requests }) => [type, requests] as const)]);
    this.#stream = this.#subscribe(session);
  }

  /** Holds every type it watches, EDS aside: its listeners and clusters can be used (their routes and Secrets with them). */
  get served(): boolean {
    for (const type of this.#requests.keys()) if (type !== 'EDS' && this.versions[type] === '') return false;
    return true;
  }

  /** Holds every type it watches. */
  get complete(): boolean {
    for (const type of this.#requests.keys()) if (this.versions[type] === '') return false;
    return true;
  }

  /** After a failover: a new stream, timed from now. */
  reconnect(session: ClientHttp2Session): void {
    this.reopenedAt = monotonicMs();
    this.#stream = this.#subscribe(session);
  }

  /** After a connection the server's kernel refused or reset before the node was served: a new stream, as Envoy retries. */
  retry(session: ClientHttp2Session): void {
    this.retries++;
    this.#stream = this.#subscribe(session);
  }

  close(): void {
    this.#stream.close(constants.NGHTTP2_CANCEL);
  }

  /** A new stream on `session`, subscribed to every type this Envoy watches, each naming the version it holds. */
  #subscribe(session: ClientHttp2Session): ClientHttp2Stream {
    const stream = this.#open(session);
    const write = (message: Buffer) => stream.write(framed(message));
    write(this.wildcards.cds.first(nodeId(this.index), this.versions.CDS));
    this.#subscribeNamedBy('CDS', write);
    write(this.wildcards.lds.subscribe(this.versions.LDS));
    this.#subscribeNamedBy('LDS', write);
    return stream;
  }

  /** Asks for the types whose names a response of `type` gave it, once it holds one. */
  #subscribeNamedBy(type: ShortType, write: (message: Buffer) => void): void {
    if (this.versions[type] === '') return;
    for (const named of this.#named) if (named.namedBy === type) write(named.requests.subscribe(this.versions[named.type]));
  }

  #open(session: ClientHttp2Session): ClientHttp2Stream {
    const stream = session.request(
      { ':method': 'POST', ':path': ADS_PATHS[this.wildcards.protocol], 'content-type': 'application/grpc', te: 'trailers' },
      { endStream: false },
    );
    const reader = new MessageReader((message) => this.#receive(message));
    let status: string | undefined;
    stream.on('data', (chunk: Buffer) => reader.push(chunk));
    // A status comes in the trailers, or in the headers of a response that has nothing else.
    const readStatus = (headers: Record<string, unknown>) => {
      if (headers['grpc-status'] !== undefined) status = `${String(headers['grpc-status'])} ${decodeURIComponent(String(headers['grpc-message'] ?? ''))}`;
    };
    stream.on('response', readStatus);
    stream.on('trailers', readStatus);
    let failure: string | undefined;
    stream.on('error', (error: Error) => (failure = error.message));
    stream.on('close', () => {
      const connection = sessionErrors.get(session);
      if (stream !== this.#stream) return;
      if (status !== undefined) this.fleet.ended(this, status);
      else this.fleet.lostConnection(this, `stream closed (HTTP/2 code ${stream.rstCode}${failure === undefined ? '' : `: ${failure}`}${connection === undefined ? '' : `; connection: ${connection}`})`);
    });
    return stream;
  }

  #write(message: Buffer): void {
    this.#stream.write(framed(message));
  }

  #receive(bytes: Buffer): void {
    readResponseHeader(bytes, header);
    const type = SHORT[header.typeUrl];
    const requests = type === undefined ? undefined : this.#requests.get(type);
    if (type === undefined || requests === undefined) {
      this.fleet.failed(this, `a response of unexpected type ${header.typeUrl}`);
      return;
    }
    const first = this.versions[type] === '';
    this.versions[type] = header.version;
    this.#write(requests.ack(header.version, header.nonce));
    // Envoy asks for what its clusters (endpoints, Secrets) and listeners (routes) name once it has them.
    if (first) this.#subscribeNamedBy(type, (message) => this.#write(message));
    this.fleet.received(this, type, bytes.length + 5, header.version);
  }
}

/** All fake Envoys of this process, and the waits the parent asks for. */
class Fleet {
  #sessions: ClientHttp2Session[] = [];
  readonly #envoys: FakeEnvoy[] = [];
  #traffic = noTraffic();
  #served = 0;
  #complete = 0;
  #watched: ShortType | undefined;
  #changed = 0;
  #endedCount = 0;
  #firstEnd: string | undefined;
  #closing = false;
  #wake: (() => void) | undefined;
  #reconnect: { readonly address: string; readonly spreadMs: number; readonly sessions: Map<number, ClientHttp2Session> } | undefined;
  #reserved = 0;
  #address: string | undefined;
  #retried = 0;

  open(args: ConnectArgs, nodes: { first: number; count: number }): void {
    this.#address = args.address;
    const wildcards = new Wildcards(args.protocol ?? 'sotw');
    for (let offset = 0; offset < nodes.count; offset++) {
      if (offset % args.streamsPerConnection === 0) this.#sessions.push(openConnection(args.address));
      this.#envoys.push(new FakeEnvoy(nodes.first + offset, this.#sessions.length - 1, this.#sessions.at(-1)!, this, wildcards, args.shape));
    }
  }

  received(envoy: FakeEnvoy, type: ShortType, bytes: number, version: string): void {
    this.#traffic.responses[type]++;
    this.#traffic.bytes[type] += bytes;
    const now = monotonicMs();
    if (Number.isNaN(envoy.servedAt) && envoy.served) {
      envoy.servedAt = now;
      this.#served++;
    }
    if (Number.isNaN(envoy.completeAt) && envoy.complete) {
      envoy.completeAt = now;
      this.#complete++;
      if (this.#complete === this.#envoys.length) this.#wake?.();
    }
    if (type === this.#watched && Number.isNaN(envoy.changeAckedAt) && version !== envoy.baseline) {
      envoy.changeAckedAt = now;
      if (++this.#changed === this.#envoys.length) this.#wake?.();
    }
    if (!Number.isNaN(envoy.reopenedAt)) {
      envoy.sinceReconnect[type]++;
      if (Number.isNaN(envoy.firstResponseAt)) envoy.firstResponseAt = now;
      // EDS is named, so always re-sent, and it follows CDS (push order): the node is served again.
      if (type === 'EDS' && Number.isNaN(envoy.reservedAt)) {
        envoy.reservedAt = now;
        if (++this.#reserved === this.#envoys.length) this.#wake?.();
      }
    }
  }

  /**
   * A connection failed without a gRPC status: during a storm the server's kernel may reset a
   * connection it could not queue (a SYN cookie that no longer matches), and Envoy retries after
   * its jittered back-off (`chancery bootstrap envoy`: base 0.25 s). Before the node is first
   * served the fake Envoy does too; otherwise it is an ended stream.
   */
  lostConnection(envoy: FakeEnvoy, reason: string): void {
    const address = this.#address;
    if (this.#closing || this.#reconnect || !Number.isNaN(envoy.servedAt) || address === undefined || envoy.retries >= MAX_RETRIES) {
      this.ended(envoy, envoy.retries >= MAX_RETRIES ? `${reason}, after ${MAX_RETRIES} retries` : reason);
      return;
    }
    this.#retried++;
    setTimeout(() => {
      const session = openConnection(address);
      this.#sessions.push(session);
      envoy.retry(session);
    }, Math.random() * RETRY_BASE_MS);
  }

  /** A stream ended: armed for a failover, the Envoy reconnects (once); otherwise the run fails. */
  ended(envoy: FakeEnvoy, reason: string): void {
    const reconnect = this.#reconnect;
    if (this.#closing || !reconnect || !Number.isNaN(envoy.endedAt)) {
      this.failed(envoy, reason);
      return;
    }
    envoy.endedAt = monotonicMs();
    let session = reconnect.sessions.get(envoy.connection);
    if (!session) {
      session = openConnection(reconnect.address);
      reconnect.sessions.set(envoy.connection, session);
    }
    const target = session;
    if (reconnect.spreadMs === 0) envoy.reconnect(target);
    else setTimeout(() => envoy.reconnect(target), Math.random() * reconnect.spreadMs);
  }

  failed(envoy: FakeEnvoy, reason: string): void {
    if (this.#closing) return;
    this.#endedCount++;
    this.#firstEnd ??= `stream of ${nodeId(envoy.index)} ended: ${reason}`;
    this.#wake?.();
  }

  async until(done: () => boolean, what: () => string, timeoutMs: number): Promise<void> {
    const deadline = monotonicMs() + timeoutMs;
    while (!done()) {
      if (this.#firstEnd !== undefined) throw new Error(`${this.#endedCount} streams ended while waiting for ${what()}; first: ${this.#firstEnd}`);
      const left = deadline - monotonicMs();
      if (left <= 0) throw new Error(`timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for ${what()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 1_000));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  async connect(args: ConnectArgs): Promise<ConnectResult> {
    const { nodes = { first: 0, count: args.shape.nodes }, timeoutMs } = args;
    const startedAt = monotonicMs();
    this.open(args, nodes);
    const openedAt = monotonicMs();
    const total = this.#envoys.length;
    await this.until(
      () => this.#complete === total,
      () => `all ${total} nodes to be served (${this.#served} have what they need but EDS, ${this.#complete} also EDS)`,
      timeoutMs,
    );
    return {
      startedAt,
      openedAt,
      served: Float64Array.from(this.#envoys, (envoy) => envoy.servedAt),
      complete: Float64Array.from(this.#envoys, (envoy) => envoy.completeAt),
      retried: this.#retried,
      traffic: this.#takeTraffic(),
    };
  }

  get complete(): number {
    return this.#complete;
  }

  expectChange(type: ShortType, keepTraffic: boolean): void {
    this.#watched = type;
    this.#changed = 0;
    for (const envoy of this.#envoys) {
      envoy.baseline = envoy.versions[type];
      envoy.changeAckedAt = Number.NaN;
    }
    if (!keepTraffic) this.#takeTraffic();
  }

  async awaitChange(timeoutMs: number): Promise<ChangeResult> {
    const total = this.#envoys.length;
    await this.until(
      () => this.#changed === total,
      () => `all ${total} nodes to ACK a new ${this.#watched} version (${this.#changed} have)`,
      timeoutMs,
    );
    this.#watched = undefined;
    return { acked: Float64Array.from(this.#envoys, (envoy) => envoy.changeAckedAt), traffic: this.#takeTraffic() };
  }

  armReconnect(address: string, spreadMs: number): void {
    if (this.#envoys.some((envoy) => envoy.wildcards.protocol !== 'sotw')) throw new Error('a failover is played over State of the World only');
    this.#reconnect = { address, spreadMs, sessions: new Map() };
    this.#reserved = 0;
    for (const envoy of this.#envoys) {
      envoy.endedAt = envoy.reopenedAt = envoy.firstResponseAt = envoy.reservedAt = Number.NaN;
      envoy.sinceReconnect = { CDS: 0, EDS: 0, LDS: 0, RDS: 0, SDS: 0 };
    }
    this.#takeTraffic();
  }

  async awaitFailover(timeoutMs: number): Promise<FailoverResult> {
    const total = this.#envoys.length;
    const reconnect = this.#reconnect;
    if (!reconnect) throw new Error('awaitFailover without armReconnect');
    const reopened = () => this.#envoys.filter((envoy) => !Number.isNaN(envoy.reopenedAt)).length;
    await this.until(
      () => this.#reserved === total,
      () => `all ${total} nodes to be served again at ${reconnect.address} (${reopened()} reconnected, ${this.#reserved} have EDS there)`,
      timeoutMs,
    );
    // Disarmed: from now on a stream that ends fails the run.
    this.#reconnect = undefined;
    for (const session of this.#sessions) session.destroy();
    this.#sessions = [...reconnect.sessions.values()];
    const times = (of: (envoy: FakeEnvoy) => number) => Float64Array.from(this.#envoys, of);
    return {
      ended: times((envoy) => envoy.endedAt),
      reopened: times((envoy) => envoy.reopenedAt),
      firstResponse: times((envoy) => envoy.firstResponseAt),
      served: times((envoy) => envoy.reservedAt),
      connection: Int32Array.from(this.#envoys, (envoy) => envoy.connection),
      resent: {
        CDS: this.#envoys.filter((envoy) => envoy.sinceReconnect.CDS > 0).length,
        LDS: this.#envoys.filter((envoy) => envoy.sinceReconnect.LDS > 0).length,
      },
      traffic: this.#takeTraffic(),
    };
  }

  close(): void {
    this.#closing = true;
    for (const envoy of this.#envoys) envoy.close();
    for (const session of this.#sessions) session.destroy();
    for (const session of this.#reconnect?.sessions.values() ?? []) session.destroy();
  }

  #takeTraffic(): Traffic {
    const traffic = this.#traffic;
    this.#traffic = noTraffic();
    return traffic;
  }
}

const fleet = new Fleet();

serveCommands<FleetApi>({
  connect: (args) => fleet.connect(args),
  armReconnect({ address, spreadMs }) {
    fleet.armReconnect(address, spreadMs);
    return null;
  },
  awaitFailover: ({ timeoutMs }) => fleet.awaitFailover(timeoutMs),
  expectChange({ type, keepTraffic = false }) {
    fleet.expectChange(type, keepTraffic);
    return null;
  },
  awaitChange: ({ timeoutMs }) => fleet.awaitChange(timeoutMs),
  progress: () => ({ complete: fleet.complete }),
  usage() {
    const { user, system } = process.cpuUsage();
    const { heapUsed, rss } = process.memoryUsage();
    return { cpuMs: (user + system) / 1000, heapUsed, rss };
  },
  close() {
    fleet.close();
    setTimeout(() => process.exit(0), 10);
    return null;
  },
});
