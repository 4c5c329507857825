import {
  Server,
  ServerCredentials,
  status as grpcStatus,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type sendUnaryData,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { answerClientStatus, UnsupportedNodeMatcherError, type ClientStatusSource } from './client-status.js';
import { excerpt } from '../common/index.js';
import { ConnectionStreams } from './connection-streams.js';
import { ConnectWindow } from './connect-window.js';
import { listenForGrpc, type GrpcListener } from './grpc-listener.js';
import { ADS_SERVICE, CSDS_SERVICE, PER_TYPE_SERVICES, serviceDefinition } from './grpc-services.js';
import { malformedRequest, refuseRequest, type XdsLimits } from './request-limits.js';
import { RequestRate } from './request-rate.js';
import { ResponseEncoder } from './response-encoder.js';
import { ADMIT_ALL, type RefusedStream, type Refusal, type StreamAdmission, type StreamAuthentication } from './stream-admission.js';
import { StreamGate, type ExpiryClock, type GateOutcomes } from './stream-gate.js';
import type { Protocol, TypedRequest } from './stream/index.js';
import { StreamWriter, type EndStatus, type StreamSink } from './stream-writer.js';
import { isTypeUrl, PUSH_ORDER } from './type-urls.js';
import { decodeDeltaRequest, decodeRequest, type WireRequest } from './xds-request.js';

/** How each ADS method's requests are read. */
const DECODERS = { DiscoveryRequest: decodeRequest, DeltaDiscoveryRequest: decodeDeltaRequest };

/** What the server reports to; the session registry implements it. */
export interface SessionGateway {
  open(
    stream: { id: string; peer: string; openedAt: number; protocol: Protocol; authentication: StreamAuthentication },
    sink: StreamSink,
    node: string,
    request: TypedRequest,
  ): void;
  /** A later request of the stream's node, as read: what it is (`requestKind`) is the sessions' to tell. */
  request(node: string, streamId: string, request: TypedRequest): void;
  close(node: string, streamId: string, reason: string): void;
}

export interface XdsServerOptions {
  readonly gateway: SessionGateway;
  readonly instanceId: string;
  readonly logger: Logger;
  readonly now: () => number;
  /** What one client may send (issue 11); `createControlPlane` passes DEFAULTS.xdsLimits with its options. */
  readonly limits: XdsLimits;
  /**
   * ms after which a stream is ended with UNAVAILABLE, ±10% jitter, so that a fleet
   * rebalances across instances after a scale-out (Istio's MaxConnectionAge); undefined: never.
   */
  readonly maxConnectionAge?: number;
  /** In [0, 1): the jitter's source. Default `Math.random`. */
  readonly random?: () => number;
  /** What the Client Status Discovery Service reports: the sessions' view of each node. */
  readonly clientStatus: ClientStatusSource;
  /** Who may be served (DESIGN §10); default: every stream, unauthenticated. */
  readonly admission?: StreamAdmission;
  /** Told of every stream refused by the admission or for switching node id. */
  readonly onRefused?: (refused: RefusedStream) => void;
  /** Timers that end a stream when its token expires; default the process's. */
  readonly clock?: ExpiryClock;
  /** The connect window every listener of the server shares; default `new ConnectWindow()`. */
  readonly connectWindow?: ConnectWindow;
}

/** What `XdsServer.sizes()` counts. */
export interface XdsServerSizes {
  /** Streams open, including those whose first request has not arrived yet. */
  readonly streams: number;
  /** Streams whose gate (admission, node pinning, token expiry) is still open. */
  readonly gates: number;
  /** Client connections with a stream open, counted for `maxStreamsPerConnection`. */
  readonly connections: number;
  /** Connections accepted and not answered yet: waiting for the connect window, or in it (`connects()`). */
  readonly admitting: number;
}

const SYSTEM_CLOCK: ExpiryClock = {
  setTimeout: (fn, timeout) => setTimeout(fn, timeout).unref(),
  clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout),
};

/** What an ended stream's client is told: reconnect, to this instance or another. */
const RECONNECT = 'UNAVAILABLE';

/**
 * The xDS gRPC server: ADS, State of the World and Delta, and CSDS beside them. It translates
 * wire messages into session events and session intents into bytes, and decides nothing else;
 * one translation serves both protocols, whose differences are in the ledgers. The per-type
 * services answer UNIMPLEMENTED rather than accepting a stream they would never answer
 * (kuma#18329).
 */
export class XdsServer {
  readonly #options: XdsServerOptions;
  readonly #server: Server;
  readonly #encoder: ResponseEncoder;
  /** Open streams, including those whose first request has not arrived yet. */
  readonly #open = new Set<StreamWriter>();
  /** The gate of every open stream. */
  readonly #gates = new Set<StreamGate>();
  readonly #connections: ConnectionStreams;
  readonly #listeners: GrpcListener[] = [];
  /** Connections taken on and not answered yet, across every listener: a storm is served a window at a time. */
  readonly #window: ConnectWindow;
  /** What every stream this server serves needs of it. */
  readonly #host: StreamHost;
  #streams = 0;
  #draining = false;
  /** Resolves once grpc-js has closed every connection, each after its last stream: from the first drain or close on. */
  #shutdown: Promise<void> | undefined;

  constructor(options: XdsServerOptions) {
    this.#options = options;
    this.#window = options.connectWindow ?? new ConnectWindow();
    this.#host = {
      options,
      forget: (stream) => {
        this.#open.delete(stream.writer);
        this.#gates.delete(stream.gate);
        this.#connections.close(stream.peer);
        // A stream ended unanswered (its node not served yet) ends that connect: its place is free.
        this.#window.leave(stream.peer);
      },
    };
    this.#connections = new ConnectionStreams(options.limits.maxStreamsPerConnection);
    const age = options.maxConnectionAge;
    this.#server = new Server({
      'grpc.max_concurrent_streams': 100_000,
      // grpc-js keeps channelz records of every connection and message by default; Chancery
      // serves no channelz service to read them from, and they cost ~1 KB of heap a session.
      'grpc.enable_channelz': 0,
      // grpc-js refuses a larger request itself, with RESOURCE_EXHAUSTED, before decoding it.
      'grpc.max_receive_message_length': options.limits.maxRequestBytes,
      // The connection is told GOAWAY (grpc-js adds ±10%) before its stream is ended, so the
      // client reconnects on a new connection, which a load balancer may send elsewhere. The
      // grace only backs up the stream's own end.
      ...(age !== undefined && { 'grpc.max_connection_age_ms': Math.round(age * 0.8), 'grpc.max_connection_age_grace_ms': Math.round(age * 0.4) }),
    });
    this.#encoder = new ResponseEncoder(options.instanceId);
    const refusal = (what: string) => ({
      code: grpcStatus.UNIMPLEMENTED,
      details: `${what} is not implemented by Chancery; use ADS (StreamAggregatedResources for State of the World, DeltaAggregatedResources for Delta)`,
    });
    const unimplemented = (what: string) => (call: ServerDuplexStream<unknown, unknown>) => call.emit('error', refusal(what));
    const unimplementedUnary = (what: string) => (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => callback(refusal(what));

    this.#server.addService(serviceDefinition(ADS_SERVICE, DECODERS), {
      StreamAggregatedResources: (call: ServerDuplexStream<WireRequest, Uint8Array>) => this.#serve(call, 'sotw'),
      DeltaAggregatedResources: (call: ServerDuplexStream<WireRequest, Uint8Array>) => this.#serve(call, 'delta'),
    } satisfies UntypedServiceImplementation);
    this.#server.addService(serviceDefinition(CSDS_SERVICE), {
      FetchClientStatus: (call: ServerUnaryCall<Uint8Array, Uint8Array>, callback: sendUnaryData<Uint8Array>) => {
        this.#window.leave(call.getPeer());
        const answered = this.#clientStatus(call.request);
        if ('bytes' in answered) callback(null, answered.bytes);
        else callback(answered.refusal);
      },
      StreamClientStatus: (call: ServerDuplexStream<Uint8Array, Uint8Array>) => {
        call.on('data', (request: Uint8Array) => {
          this.#window.leave(call.getPeer());
          const answered = this.#clientStatus(request);
          if ('bytes' in answered) call.write(answered.bytes);
          else call.emit('error', answered.refusal);
        });
        call.on('end', () => call.end());
      },
    } satisfies UntypedServiceImplementation);
    for (const service of PER_TYPE_SERVICES) {
      const definition = serviceDefinition(service);
      const implementation: UntypedServiceImplementation = {};
      for (const [method, spec] of Object.entries(definition)) {
        const what = `${service}/${method}`;
        implementation[method] = spec.requestStream ? unimplemented(what) : unimplementedUnary(what);
      }
      this.#server.addService(definition, implementation);
    }
  }

  /**
   * For tests and diagnostics: how many entries the per-stream and per-connection tables hold.
   * With no stream open and every connection answered or closed, each is 0 (I3).
   */
  sizes(): XdsServerSizes {
    const { waiting, connecting } = this.connects();
    return { streams: this.#open.size, gates: this.#gates.size, connections: this.#connections.size, admitting: waiting + connecting };
  }

  /** For tests and diagnostics: connections accepted and waiting for the connect window, and those in it (taken on, not answered yet). */
  connects(): { waiting: number; connecting: number } {
    let waiting = 0;
    for (const listener of this.#listeners) waiting += listener.waiting;
    return { waiting, connecting: this.#window.size };
  }

  /** Binds `host:port` (port 0 lets the OS choose), over TLS when given credentials, and resolves with the bound address. */
  async listen(address: string, credentials = ServerCredentials.createInsecure()): Promise<string> {
    const listener = await listenForGrpc(this.#server, address, credentials, this.#window);
    this.#listeners.push(listener);
    return listener.address;
  }

  /**
   * Asks the admission again about every admitted stream, and ends those it no longer admits
   * (a key removed, a mesh now requiring tokens). Called on each store change that touches
   * credentials, before the change reaches the sessions, so nothing is sent to them after.
   */
  recheck(): void {
    for (const gate of this.#gates) gate.recheck();
  }

  /**
   * Starts draining: new streams are refused with UNAVAILABLE and connections are told GOAWAY,
   * so clients reconnect to other instances; open streams go on until their sessions end them.
   */
  drain(): void {
    this.#draining = true;
    this.#stopAccepting();
    this.#shutDown();
  }

  /**
   * Ends every stream still open with UNAVAILABLE (sessions have ended theirs), then waits until
   * every connection has closed, forcing after `timeoutMs`. A connection closes once its last
   * stream has (HTTP/2's graceful close), and its socket only after what was written to it, the
   * streams' statuses included, has been flushed: a client is told why its stream ended, not
   * left with a dropped connection.
   */
  close(timeoutMs = 5_000): Promise<void> {
    this.#stopAccepting();
    for (const writer of this.#open) writer.end({ code: RECONNECT, message: 'control plane shutting down; reconnect to another instance' });
    return new Promise((resolve) => {
      const force = setTimeout(() => {
        this.#server.forceShutdown();
        resolve();
      }, timeoutMs);
      void this.#shutDown().then(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  /**
   * grpc-js's graceful shutdown, asked for once: asked again, it would find the connections
   * already closing and answer at once, before their streams' statuses have reached the clients.
   */
  #shutDown(): Promise<void> {
    this.#shutdown ??= new Promise((resolve) => this.#server.tryShutdown(() => resolve()));
    return this.#shutdown;
  }

  #stopAccepting(): void {
    for (const listener of this.#listeners.splice(0)) listener.close();
  }

  #serve(call: ServerDuplexStream<WireRequest, Uint8Array>, protocol: Protocol): void {
    const { instanceId, limits } = this.#options;
    const id = `${instanceId}/${++this.#streams}`;
    const peer = call.getPeer();
    const writer = new StreamWriter(call, this.#encoder, () => this.#window.leave(peer));
    if (this.#draining) {
      writer.end({ code: RECONNECT, message: `instance ${instanceId} is draining; reconnect to another instance` });
      return;
    }
    if (!this.#connections.open(peer)) {
      writer.end({ code: 'RESOURCE_EXHAUSTED', message: `this connection has ${limits.maxStreamsPerConnection} streams open, the most one connection may have` });
      return;
    }
    const stream = new ServedStream(call, { id, peer, protocol }, writer, this.#ageLimit(writer), this.#host);
    this.#open.add(writer);
    this.#gates.add(stream.gate);
    call.on('data', (wire: WireRequest) => stream.read(wire));
    call.on('end', () => {
      stream.close('client closed the stream');
      call.end();
    });
    call.on('cancelled', () => stream.close('stream cancelled'));
    // A status this server ends the stream with arrives here too, as `details`.
    call.on('error', (error: Error & { details?: string }) => stream.close(`stream ended: ${error.details ?? error.message}`));
    call.on('close', () => stream.close('stream closed'));
  }

  /** A CSDS answer, or the INVALID_ARGUMENT status for a request it cannot answer as asked. */
  #clientStatus(request: Uint8Array): { bytes: Uint8Array } | { refusal: { code: number; details: string } } {
    try {
      return { bytes: answerClientStatus(request, this.#options.clientStatus) };
    } catch (error) {
      if (error instanceof UnsupportedNodeMatcherError) return { refusal: { code: grpcStatus.INVALID_ARGUMENT, details: error.message } };
      // Not a protobuf ClientStatusRequest at all.
      return { refusal: { code: grpcStatus.INVALID_ARGUMENT, details: `not a ClientStatusRequest: ${(error as Error).message.slice(0, 200)}` } };
    }
  }

  /** Ends the stream once it reaches the maximum connection age, with jitter; no timer without one. */
  #ageLimit(writer: StreamWriter): NodeJS.Timeout | undefined {
    const { maxConnectionAge: age, random = Math.random } = this.#options;
    if (age === undefined) return undefined;
    const timer = setTimeout(
      () => writer.end({ code: RECONNECT, message: `stream reached the maximum connection age (${age} ms); reconnect` }),
      age * (0.9 + 0.2 * random()),
    );
    timer.unref();
    return timer;
  }
}

/** What a served stream needs of the server that accepted it: one object for all its streams. */
interface StreamHost {
  readonly options: XdsServerOptions;
  /** The stream ended: the server no longer counts it, its gate or its connection's stream. */
  forget(stream: ServedStream): void;
}

/**
 * One ADS stream, from its first message to its end: it checks each request against the limits,
 * hands it to the stream's gate, and tells the gateway what the gate lets through. A class: the
 * gate's outcomes are its methods, not a closure each per stream (under tsx, which keeps every
 * named function's name, each closure also cost a property of its own).
 */
class ServedStream implements GateOutcomes {
  readonly gate: StreamGate;
  readonly peer: string;
  readonly #id: string;
  readonly #protocol: Protocol;
  readonly #aged: NodeJS.Timeout | undefined;
  readonly #rate: RequestRate;
  readonly #host: StreamHost;
  /** The node the session was told of, once admitted: it is told when the stream closes too. */
  #served: string | undefined;
  #closed = false;

  constructor(
    call: ServerDuplexStream<WireRequest, Uint8Array>,
    stream: { readonly id: string; readonly peer: string; readonly protocol: Protocol },
    readonly writer: StreamWriter,
    aged: NodeJS.Timeout | undefined,
    host: StreamHost,
  ) {
    const { admission = ADMIT_ALL, clock = SYSTEM_CLOCK, now, limits } = host.options;
    this.#id = stream.id;
    this.peer = stream.peer;
    this.#protocol = stream.protocol;
    this.#aged = aged;
    this.#host = host;
    this.#rate = new RequestRate(limits.maxRequestsPerSecond, now());
    this.gate = new StreamGate({
      admission,
      protocol: stream.protocol,
      clock,
      now,
      // Read once, when the stream opens (as Kuma does): gRPC metadata cannot change later, and
      // Node's HTTP/2 takes a single authorization header.
      authorization: call.metadata.get('authorization').map(String)[0],
      outcomes: this,
    });
  }

  /** A message read off the stream. */
  read(wire: WireRequest): void {
    // A stream that was ended is not read: its status is on its way.
    if (this.#closed) return;
    const { limits, now } = this.#host.options;
    if (!wire.ok) return this.#end(malformedRequest(wire.reason, this.#protocol), 'malformed request');
    if (!this.#rate.take(now())) return this.#end({ code: 'RESOURCE_EXHAUSTED', message: `more than ${limits.maxRequestsPerSecond} requests in a second on this stream` }, 'request rate');
    const { request } = wire;
    const node = this.gate.node;
    const refusal = refuseRequest(request, wire.nodeMetadata, node === undefined, limits);
    if (refusal !== undefined) return this.#end(refusal, 'request over a limit');
    if (!isTypeUrl(request.typeUrl)) {
      const message = `type URL ${excerpt(request.typeUrl, 160)} is not served by Chancery${node ? ` (node ${node})` : ''}; it serves ${PUSH_ORDER.join(', ')}`;
      return this.#end({ code: 'INVALID_ARGUMENT', message }, 'unsupported type URL');
    }
    this.gate.receive(request as TypedRequest);
  }

  admitted(node: string, authentication: StreamAuthentication, first: TypedRequest): void {
    const { logger, gateway, now } = this.#host.options;
    const { peer } = this;
    const id = this.#id;
    const protocol = this.#protocol;
    this.#served = node;
    logger.debug({ node, stream: id, peer, protocol, typeUrl: first.typeUrl, by: authentication.by }, 'stream opened');
    gateway.open({ id, peer, openedAt: now(), protocol, authentication }, this.writer, node, first);
  }

  request(node: string, request: TypedRequest): void {
    this.#host.options.gateway.request(node, this.#id, request);
  }

  refused(node: string, refusal: Refusal): void {
    const { logger, onRefused, now } = this.#host.options;
    const { peer } = this;
    const protocol = this.#protocol;
    logger.warn({ node, stream: this.#id, peer, protocol, code: refusal.code, reason: refusal.reason }, `stream refused: ${refusal.message}`);
    onRefused?.({ ...refusal, at: new Date(now()).toISOString(), node, peer, protocol });
    this.writer.end({ code: refusal.code, message: `${refusal.message} (node ${node})` });
    this.close(`refused: ${refusal.reason}`);
  }

  invalid(status: EndStatus, reason: string): void {
    this.#end(status, reason);
  }

  /** The stream ended, for `reason`: its gate shuts, its writer writes no more, and its session is told. */
  close(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#aged) clearTimeout(this.#aged);
    this.gate.shut();
    this.writer.closed();
    this.#host.forget(this);
    if (this.#served !== undefined) this.#host.options.gateway.close(this.#served, this.#id, reason);
  }

  #end(status: EndStatus, reason: string): void {
    this.writer.end(status);
    this.close(reason);
  }
}
