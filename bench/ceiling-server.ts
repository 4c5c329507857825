/**
 * The ceiling: a bench child process running a bare grpc-js ADS server, State of the World and
 * Delta, with no sessions, no generation and no store. It answers each subscription with
 * response bytes encoded before the run, of the sizes Chancery sent in the same run, for every type
 * Chancery sent (RDS and SDS too when the mesh has them), and ignores ACKs; a change writes one new
 * pre-encoded response of the changed type (EDS for an endpoint, RDS for a policy) to every stream
 * that asked for that type, in one loop. What the fleet measures against it is the most Node and grpc-js allow on this
 * machine for the same traffic: the gap to Chancery is what Chancery's own code costs.
 */
import { Server, ServerCredentials, type ServerDuplexStream, type ServiceDefinition } from '@grpc/grpc-js';
import { ConnectWindow } from '../src/xds/connect-window.js';
import { listenForGrpc, type GrpcListener } from '../src/xds/grpc-listener.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET } from '../src/xds/type-urls.js';
import { monotonicMs, serveCommands } from './support/child-link.js';
import { ADS_PATHS, field, readRequestKind, type WireProtocol } from './support/discovery-wire.js';
import type { ChangeKind } from './support/mesh-shape.js';
import { processProbes, type ProbeApi } from './support/process-probes.js';
import type { ShortType } from './support/traffic.js';

/**
 * Bytes of one response (the message, without gRPC's 5-byte prefix), per type the fleet watches:
 * CDS, EDS and LDS always, RDS and SDS when Chancery sent them.
 */
export type ResponseSizes = Readonly<Partial<Record<ShortType, number>>>;

export type CeilingApi = ProbeApi & {
  start: { args: { sizes: ResponseSizes }; result: { xds: string; pid: number } };
  /** Writes a new response of `bytes` of the type `kind` changes to every stream subscribed to it; says when the loop began and ended. */
  change: { args: { change: number; kind: ChangeKind; bytes: number }; result: { startedAt: number; fannedOutAt: number } };
  stop: { args: null; result: { ms: number } };
};

const TYPES: Readonly<Record<ShortType, string>> = { CDS: CLUSTER, EDS: ENDPOINT, LDS: LISTENER, RDS: ROUTE, SDS: SECRET };
const REQUIRED: readonly ShortType[] = ['CDS', 'EDS', 'LDS'];
/** The type each kind of change writes. */
const CHANGED: Readonly<Record<ChangeKind, string>> = { endpoint: ENDPOINT, policy: ROUTE };

/**
 * A response of about `size` bytes: version, nonce and type URL where the fleet reads them, and
 * one resource whose bytes fill the rest (the fleet skips resources unread). DiscoveryResponse
 * and DeltaDiscoveryResponse put the version in field 1, resources in 2, the type URL in 4 and
 * the nonce in 5, so one layout serves both.
 */
function response(typeUrl: string, version: string, size: number): Buffer {
  const head = Buffer.concat([field(1, version), field(4, typeUrl), field(5, `${version}-n`)]);
  const filler = Math.max(0, size - head.length - 8);
  return Buffer.concat([head, field(2, Buffer.alloc(filler, 1))]);
}

class Ceiling {
  // The same server options as Chancery's xDS server, so the gap is Chancery's own code.
  readonly #server = new Server({ 'grpc.max_concurrent_streams': 100_000, 'grpc.enable_channelz': 0 });
  /** The response to a subscription, by type URL: only the types Chancery sent. */
  readonly #responses = new Map<string, Buffer>();
  /** Streams that asked for a type a change writes (EDS, RDS), by type URL. */
  readonly #watching = new Map<string, Set<ServerDuplexStream<Buffer, Buffer>>>(Object.values(CHANGED).map((typeUrl) => [typeUrl, new Set()]));
  #listener: GrpcListener | undefined;
  /** Chancery's connect window, told of each stream's first answer as Chancery's server tells it. */
  readonly #window = new ConnectWindow();

  constructor(sizes: ResponseSizes) {
    for (const [type, size] of Object.entries(sizes)) this.#responses.set(TYPES[type as ShortType], response(TYPES[type as ShortType], 'v1', size));
    const passThrough = (bytes: Buffer) => bytes;
    const method = (protocol: WireProtocol) => ({
      path: ADS_PATHS[protocol],
      requestStream: true,
      responseStream: true,
      requestSerialize: passThrough,
      requestDeserialize: passThrough,
      responseSerialize: passThrough,
      responseDeserialize: passThrough,
    });
    const definition = { StreamAggregatedResources: method('sotw'), DeltaAggregatedResources: method('delta') } as ServiceDefinition;
    this.#server.addService(definition, {
      StreamAggregatedResources: (call: ServerDuplexStream<Buffer, Buffer>) => this.#serve(call, 'sotw'),
      DeltaAggregatedResources: (call: ServerDuplexStream<Buffer, Buffer>) => this.#serve(call, 'delta'),
    });
  }

  /** Listens as Chancery does (src/xds/grpc-listener.ts), so both are measured with the same accept queue and connect window. */
  async listen(): Promise<string> {
    this.#listener = await listenForGrpc(this.#server, '127.0.0.1:0', ServerCredentials.createInsecure(), this.#window);
    return this.#listener.address;
  }

  change(change: number, kind: ChangeKind, bytes: number): { startedAt: number; fannedOutAt: number } {
    const startedAt = monotonicMs();
    const typeUrl = CHANGED[kind];
    const next = response(typeUrl, `v${change + 1}`, bytes);
    this.#responses.set(typeUrl, next);
    for (const call of this.#watching.get(typeUrl)!) call.write(next);
    return { startedAt, fannedOutAt: monotonicMs() };
  }

  stop(): void {
    this.#listener?.close();
    this.#server.forceShutdown();
  }

  #serve(call: ServerDuplexStream<Buffer, Buffer>, protocol: WireProtocol): void {
    // The window is told of a stream's first answer only, as Chancery's StreamWriter tells it.
    let answered = false;
    call.on('data', (bytes: Buffer) => {
      const { typeUrl, answering } = readRequestKind(protocol, bytes);
      if (answering) return;
      const answer = this.#responses.get(typeUrl);
      if (answer === undefined) return;
      this.#watching.get(typeUrl)?.add(call);
      call.write(answer);
      if (answered) return;
      answered = true;
      this.#window.leave(call.getPeer());
    });
    const forget = () => {
      for (const streams of this.#watching.values()) streams.delete(call);
    };
    call.on('error', forget);
    call.on('cancelled', forget);
    call.on('end', () => {
      forget();
      call.end();
    });
  }
}

let ceiling: Ceiling | undefined;

serveCommands<CeilingApi>({
  ...processProbes(),
  async start({ sizes }) {
    for (const type of REQUIRED) {
      if (!((sizes[type] ?? 0) > 0)) throw new Error(`the ceiling needs the size of Chancery's ${type} responses, got ${sizes[type]}`);
    }
    ceiling = new Ceiling(sizes);
    return { xds: await ceiling.listen(), pid: process.pid };
  },
  change({ change, kind, bytes }) {
    if (!ceiling) throw new Error('the ceiling server has not been started');
    return ceiling.change(change, kind, bytes);
  },
  stop() {
    const started = monotonicMs();
    ceiling?.stop();
    setTimeout(() => process.exit(0), 10);
    return { ms: monotonicMs() - started };
  },
});
