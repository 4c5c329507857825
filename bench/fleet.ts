/**
 * A bench child process playing N Envoy dataplanes over real gRPC (ADS, State of the World),
 * spread over a few HTTP/2 connections. Each fake Envoy subscribes to CDS (with its node id)
 * and LDS as wildcards, ACKs every response, and asks for EDS by the names of its outbound
 * clusters once it has clusters. It records when each node was first served and when it
 * ACKed the first new version after a change, on the monotonic clock the server shares.
 *
 * Armed for a failover (`armReconnect`), a fake Envoy whose stream ends opens a new one to
 * another address at once, as Envoy does: the first request of each type it watches names
 * the version it holds, so the server may skip re-sending wildcard CDS and LDS.
 */
import { Client, credentials, Metadata, type ClientDuplexStream } from '@grpc/grpc-js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../src/xds/type-urls.js';
import { monotonicMs, serveCommands } from './support/child-link.js';
import { readResponseHeader, RequestTemplate, type ResponseHeader } from './support/discovery-wire.js';
import { endpointNames, nodeId, type MeshShape } from './support/mesh-shape.js';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

export type ShortType = 'CDS' | 'EDS' | 'LDS' | 'RDS';
const SHORT: Record<string, ShortType> = { [CLUSTER]: 'CDS', [ENDPOINT]: 'EDS', [LISTENER]: 'LDS', [ROUTE]: 'RDS' };
const TYPES: readonly ShortType[] = ['CDS', 'EDS', 'LDS', 'RDS'];

/** Responses and bytes received, per type. */
export interface Traffic {
  readonly responses: Record<ShortType, number>;
  readonly bytes: number;
}

export interface ConnectResult {
  /** Monotonic ms when the fleet started opening streams. */
  readonly startedAt: number;
  /** Monotonic ms when the last stream was opened (the loop's end). */
  readonly openedAt: number;
  /** Per node, monotonic ms when it held both CDS and LDS. */
  readonly served: Float64Array;
  /** Per node, monotonic ms when it also held EDS (and had ACKed everything so far). */
  readonly complete: Float64Array;
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

export type FleetApi = {
  /** Opens a stream for each of `nodes` (default: every node of `shape`) and waits until all are served. */
  connect: {
    args: { address: string; shape: MeshShape; nodes?: { first: number; count: number }; streamsPerConnection: number; timeoutMs: number };
    result: ConnectResult;
  };
  /** From now on, a stream that ends reconnects to `address` after a random delay under `spreadMs` (0: at once). */
  armReconnect: { args: { address: string; spreadMs: number }; result: null };
  /** Waits until every node has EDS on its new stream; a stream ending after reconnecting fails it. */
  awaitFailover: { args: { timeoutMs: number }; result: FailoverResult };
  /** Remembers each node's current version of `type`; a different one counts as the change. */
  expectChange: { args: { type: ShortType }; result: null };
  awaitChange: { args: { timeoutMs: number }; result: ChangeResult };
  usage: { args: null; result: { cpuMs: number; heapUsed: number; rss: number } };
  close: { args: null; result: null };
};

const cdsTemplate = new RequestTemplate(CLUSTER);
const ldsTemplate = new RequestTemplate(LISTENER);
const header: ResponseHeader = { version: '', typeUrl: '', nonce: '' };

/** One fake Envoy: its stream and what it has been sent. */
class FakeEnvoy {
  #call: ClientDuplexStream<Buffer, Buffer>;
  readonly #eds: RequestTemplate;
  readonly versions: Record<ShortType, string> = { CDS: '', EDS: '', LDS: '', RDS: '' };
  servedAt = Number.NaN;
  completeAt = Number.NaN;
  baseline = '';
  changeAckedAt = Number.NaN;
  // The failover: when the stream ended, the new one opened, its first response and its EDS, and its responses per type.
  endedAt = Number.NaN;
  reopenedAt = Number.NaN;
  firstResponseAt = Number.NaN;
  reservedAt = Number.NaN;
  sinceReconnect: Record<ShortType, number> = { CDS: 0, EDS: 0, LDS: 0, RDS: 0 };

  constructor(
    readonly index: number,
    /** Which of the fleet's HTTP/2 connections it uses. */
    readonly connection: number,
    client: Client,
    readonly fleet: Fleet,
    shape: MeshShape,
  ) {
    this.#eds = new RequestTemplate(ENDPOINT, endpointNames(index, shape));
    this.#call = this.#open(client);
    this.#call.write(cdsTemplate.first(nodeId(index)));
    this.#call.write(ldsTemplate.subscribe());
  }

  /** A new stream on `client`, subscribed to every type this Envoy watches, each naming the version it holds. */
  reconnect(client: Client): void {
    this.reopenedAt = monotonicMs();
    this.#call = this.#open(client);
    const { CDS, EDS, LDS } = this.versions;
    this.#call.write(cdsTemplate.first(nodeId(this.index), CDS));
    if (CDS !== '') this.#call.write(this.#eds.subscribe(EDS));
    this.#call.write(ldsTemplate.subscribe(LDS));
  }

  close(): void {
    this.#call.cancel();
  }

  #open(client: Client): ClientDuplexStream<Buffer, Buffer> {
    const call = client.makeBidiStreamRequest(ADS_PATH, (bytes: Buffer) => bytes, (bytes: Buffer) => bytes, new Metadata());
    call.on('data', (bytes: Buffer) => this.#receive(bytes));
    call.on('error', (error: Error & { code?: number; details?: string }) => {
      if (call === this.#call) this.fleet.ended(this, `${error.code ?? ''} ${error.details ?? error.message}`);
    });
    return call;
  }

  #receive(bytes: Buffer): void {
    readResponseHeader(bytes, header);
    const type = SHORT[header.typeUrl];
    if (type === undefined) {
      this.fleet.failed(this, `a response of unexpected type ${header.typeUrl}`);
      return;
    }
    const first = this.versions[type] === '';
    this.versions[type] = header.version;
    switch (type) {
      case 'CDS':
        this.#call.write(cdsTemplate.ack(header.version, header.nonce));
        // Envoy asks for the endpoints of its EDS clusters once it has them.
        if (first) this.#call.write(this.#eds.subscribe());
        break;
      case 'EDS':
        this.#call.write(this.#eds.ack(header.version, header.nonce));
        break;
      case 'LDS':
        this.#call.write(ldsTemplate.ack(header.version, header.nonce));
        break;
      case 'RDS':
        break;
    }
    this.fleet.received(this, type, bytes.length, header.version);
  }
}

/** All fake Envoys, and the waits the parent asks for. */
class Fleet {
  #clients: Client[] = [];
  readonly #envoys: FakeEnvoy[] = [];
  responses: Record<ShortType, number> = { CDS: 0, EDS: 0, LDS: 0, RDS: 0 };
  bytes = 0;
  #served = 0;
  #complete = 0;
  #watched: ShortType | undefined;
  #changed = 0;
  #endedCount = 0;
  #firstEnd: string | undefined;
  #closing = false;
  #wake: (() => void) | undefined;
  #reconnect: { readonly address: string; readonly spreadMs: number; readonly clients: Map<number, Client> } | undefined;
  #reserved = 0;

  open(address: string, shape: MeshShape, nodes: { first: number; count: number }, streamsPerConnection: number): void {
    for (let offset = 0; offset < nodes.count; offset++) {
      if (offset % streamsPerConnection === 0) this.#clients.push(newClient(address));
      this.#envoys.push(new FakeEnvoy(nodes.first + offset, this.#clients.length - 1, this.#clients.at(-1)!, this, shape));
    }
  }

  received(envoy: FakeEnvoy, type: ShortType, bytes: number, version: string): void {
    this.responses[type]++;
    this.bytes += bytes;
    const now = monotonicMs();
    const { versions } = envoy;
    if (Number.isNaN(envoy.servedAt) && versions.CDS !== '' && versions.LDS !== '') {
      envoy.servedAt = now;
      this.#served++;
    }
    if (Number.isNaN(envoy.completeAt) && versions.CDS !== '' && versions.LDS !== '' && versions.EDS !== '') {
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

  /** A stream ended: armed for a failover, the Envoy reconnects (once); otherwise the run fails. */
  ended(envoy: FakeEnvoy, reason: string): void {
    const reconnect = this.#reconnect;
    if (this.#closing || !reconnect || !Number.isNaN(envoy.endedAt)) {
      this.failed(envoy, reason);
      return;
    }
    envoy.endedAt = monotonicMs();
    let client = reconnect.clients.get(envoy.connection);
    if (!client) {
      client = newClient(reconnect.address);
      reconnect.clients.set(envoy.connection, client);
    }
    const target = client;
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

  async connect(
    address: string,
    shape: MeshShape,
    nodes: { first: number; count: number },
    streamsPerConnection: number,
    timeoutMs: number,
  ): Promise<ConnectResult> {
    const startedAt = monotonicMs();
    this.open(address, shape, nodes, streamsPerConnection);
    const openedAt = monotonicMs();
    const total = this.#envoys.length;
    await this.until(
      () => this.#complete === total,
      () => `all ${total} nodes to be served (${this.#served} have CDS and LDS, ${this.#complete} also EDS)`,
      timeoutMs,
    );
    return {
      startedAt,
      openedAt,
      served: Float64Array.from(this.#envoys, (envoy) => envoy.servedAt),
      complete: Float64Array.from(this.#envoys, (envoy) => envoy.completeAt),
      traffic: this.#takeTraffic(),
    };
  }

  expectChange(type: ShortType): void {
    this.#watched = type;
    this.#changed = 0;
    for (const envoy of this.#envoys) {
      envoy.baseline = envoy.versions[type];
      envoy.changeAckedAt = Number.NaN;
    }
    this.#takeTraffic();
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
    this.#reconnect = { address, spreadMs, clients: new Map() };
    this.#reserved = 0;
    for (const envoy of this.#envoys) {
      envoy.endedAt = envoy.reopenedAt = envoy.firstResponseAt = envoy.reservedAt = Number.NaN;
      envoy.sinceReconnect = { CDS: 0, EDS: 0, LDS: 0, RDS: 0 };
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
    // Disarmed: from now on a stream that ends fails the run. The old connections' channels would keep retrying the dead address.
    this.#reconnect = undefined;
    for (const client of this.#clients) client.close();
    this.#clients = [...reconnect.clients.values()];
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
    for (const client of this.#clients) client.close();
    for (const client of this.#reconnect?.clients.values() ?? []) client.close();
  }

  #takeTraffic(): Traffic {
    const traffic = { responses: this.responses, bytes: this.bytes };
    this.responses = Object.fromEntries(TYPES.map((type) => [type, 0])) as Record<ShortType, number>;
    this.bytes = 0;
    return traffic;
  }
}

/** A local subchannel pool: each Client gets its own HTTP/2 connection instead of sharing one. */
function newClient(address: string): Client {
  return new Client(address, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
}

const fleet = new Fleet();

serveCommands<FleetApi>({
  connect: ({ address, shape, nodes = { first: 0, count: shape.nodes }, streamsPerConnection, timeoutMs }) =>
    fleet.connect(address, shape, nodes, streamsPerConnection, timeoutMs),
  armReconnect({ address, spreadMs }) {
    fleet.armReconnect(address, spreadMs);
    return null;
  },
  awaitFailover: ({ timeoutMs }) => fleet.awaitFailover(timeoutMs),
  expectChange({ type }) {
    fleet.expectChange(type);
    return null;
  },
  awaitChange: ({ timeoutMs }) => fleet.awaitChange(timeoutMs),
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
