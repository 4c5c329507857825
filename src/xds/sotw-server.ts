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
import { excerpt } from '../excerpt.js';
import { ConnectionStreams } from './connection-streams.js';
import { ADS_SERVICE, PER_TYPE_SERVICES, serviceDefinition } from './grpc-services.js';
import { malformedRequest, refuseDiscoveryRequest, type XdsLimits } from './request-limits.js';
import { RequestRate } from './request-rate.js';
import { ResponseEncoder } from './response-encoder.js';
import type { XdsResponse } from './stream-ledger.js';
import { type EndStatus, StreamWriter, type StreamSink } from './stream-writer.js';
import { isTypeUrl, PUSH_ORDER, type TypeUrl } from './type-urls.js';
import { decodeRequest, type WireRequest, type XdsRequest } from './xds-request.js';

type TypedRequest = XdsRequest & { readonly typeUrl: TypeUrl };

/** What the server reports to; the session registry implements it. */
export interface SessionGateway {
  open(stream: { id: string; peer: string; openedAt: number }, sink: StreamSink, node: string, request: TypedRequest): void;
  request(node: string, streamId: string, kind: 'xds.requested' | 'xds.acked' | 'xds.nacked', request: TypedRequest): void;
  close(node: string, streamId: string, reason: string): void;
}

export interface XdsServerOptions {
  readonly gateway: SessionGateway;
  readonly instanceId: string;
  readonly logger: Logger;
  readonly now: () => number;
  /** What one client may send (issue 11); `createControlPlane` passes DEFAULTS.xdsLimits with its options. */
  readonly limits: XdsLimits;
  /** Told of every response written, for metrics and tests. */
  readonly onSent?: (node: string, response: XdsResponse, bytes: number) => void;
  /**
   * ms after which a stream is ended with UNAVAILABLE, ±10% jitter, so that a fleet
   * rebalances across instances after a scale-out (Istio's MaxConnectionAge); undefined: never.
   */
  readonly maxConnectionAge?: number;
  /** In [0, 1): the jitter's source. Default `Math.random`. */
  readonly random?: () => number;
}

/** What an ended stream's client is told: reconnect, to this instance or another. */
const RECONNECT = 'UNAVAILABLE';

/**
 * The xDS gRPC server: ADS State-of-the-World. It translates wire messages into session
 * events and session intents into bytes, and decides nothing else. Delta and the per-type
 * services answer UNIMPLEMENTED rather than accepting a stream they would never answer
 * (kuma#18329).
 */
export class XdsServer {
  readonly #options: XdsServerOptions;
  readonly #server: Server;
  readonly #encoder: ResponseEncoder;
  /** Open streams, including those whose first request has not arrived yet. */
  readonly #open = new Set<StreamWriter>();
  readonly #connections: ConnectionStreams;
  #streams = 0;
  #draining = false;

  constructor(options: XdsServerOptions) {
    this.#options = options;
    this.#connections = new ConnectionStreams(options.limits.maxStreamsPerConnection);
    const age = options.maxConnectionAge;
    this.#server = new Server({
      'grpc.max_concurrent_streams': 100_000,
      // grpc-js refuses a larger request itself, with RESOURCE_EXHAUSTED, before decoding it.
      'grpc.max_receive_message_length': options.limits.maxRequestBytes,
      // The connection is told GOAWAY (grpc-js adds ±10%) before its stream is ended, so the
      // client reconnects on a new connection, which a load balancer may send elsewhere. The
      // grace only backs up the stream's own end.
      ...(age !== undefined && { 'grpc.max_connection_age_ms': Math.round(age * 0.8), 'grpc.max_connection_age_grace_ms': Math.round(age * 0.4) }),
    });
    this.#encoder = new ResponseEncoder(options.instanceId);
    const unimplemented = (what: string) => (call: ServerDuplexStream<unknown, unknown>) =>
      call.emit('error', { code: grpcStatus.UNIMPLEMENTED, details: `${what} is not implemented by Chancery; use ADS StreamAggregatedResources (State of the World)` });
    const unimplementedUnary = (what: string) => (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) =>
      callback({ code: grpcStatus.UNIMPLEMENTED, details: `${what} is not implemented by Chancery; use ADS StreamAggregatedResources (State of the World)` });

    this.#server.addService(serviceDefinition(ADS_SERVICE, decodeRequest), {
      StreamAggregatedResources: (call: ServerDuplexStream<WireRequest, Uint8Array>) => this.#serve(call),
      DeltaAggregatedResources: unimplemented('Delta xDS (DeltaAggregatedResources)'),
    } satisfies UntypedServiceImplementation);
    for (const service of PER_TYPE_SERVICES) {
      const definition = serviceDefinition(service, decodeRequest);
      const implementation: UntypedServiceImplementation = {};
      for (const [method, spec] of Object.entries(definition)) {
        const what = `${service}/${method}`;
        implementation[method] = spec.requestStream ? unimplemented(what) : unimplementedUnary(what);
      }
      this.#server.addService(definition, implementation);
    }
  }

  /** Binds `host:port` (port 0 lets the OS choose) and resolves with the bound address. */
  listen(address: string): Promise<string> {
    return new Promise((resolve, reject) => {
      this.#server.bindAsync(address, ServerCredentials.createInsecure(), (error, port) => {
        if (error) reject(error);
        else resolve(`${address.slice(0, address.lastIndexOf(':'))}:${port}`);
      });
    });
  }

  /**
   * Starts draining: new streams are refused with UNAVAILABLE and connections are told GOAWAY,
   * so clients reconnect to other instances; open streams go on until their sessions end them.
   */
  drain(): void {
    this.#draining = true;
    this.#server.tryShutdown(() => {});
  }

  /**
   * Ends every stream still open with UNAVAILABLE (sessions have ended theirs), then waits for
   * the calls to finish, forcing after `timeoutMs`.
   */
  close(timeoutMs = 5_000): Promise<void> {
    for (const writer of this.#open) writer.end({ code: RECONNECT, message: 'control plane shutting down; reconnect to another instance' });
    return new Promise((resolve) => {
      const force = setTimeout(() => {
        this.#server.forceShutdown();
        resolve();
      }, timeoutMs);
      this.#server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  #serve(call: ServerDuplexStream<WireRequest, Uint8Array>): void {
    const { gateway, instanceId, logger, now, onSent, limits } = this.#options;
    const streamId = `${instanceId}/${++this.#streams}`;
    let node: string | undefined;
    const writer = new StreamWriter(call, this.#encoder, onSent && ((response, bytes) => onSent(node ?? '', response, bytes)));
    if (this.#draining) {
      writer.end({ code: RECONNECT, message: `instance ${instanceId} is draining; reconnect to another instance` });
      return;
    }
    const peer = call.getPeer();
    if (!this.#connections.open(peer)) {
      const message = `this connection has ${limits.maxStreamsPerConnection} streams open, the most one connection may have`;
      writer.end({ code: 'RESOURCE_EXHAUSTED', message });
      return;
    }
    this.#open.add(writer);
    const aged = this.#ageLimit(writer);
    const rate = new RequestRate(limits.maxRequestsPerSecond, now());
    let closed = false;
    const close = (reason: string) => {
      if (closed) return;
      closed = true;
      if (aged) clearTimeout(aged);
      this.#open.delete(writer);
      this.#connections.close(peer);
      writer.closed();
      if (node !== undefined) gateway.close(node, streamId, reason);
    };
    const refuse = (status: EndStatus) => {
      writer.end(status);
      close(status.message);
    };

    call.on('data', (wire: WireRequest) => {
      // A refused stream's later messages are not read: its status is on its way.
      if (closed) return;
      if (!wire.ok) return refuse(malformedRequest(wire.reason));
      if (!rate.take(now())) {
        return refuse({ code: 'RESOURCE_EXHAUSTED', message: `more than ${limits.maxRequestsPerSecond} requests in a second on this stream` });
      }
      const { request } = wire;
      const refusal = refuseDiscoveryRequest(request, wire.nodeMetadata, node === undefined, limits);
      if (refusal !== undefined) return refuse(refusal);
      if (!isTypeUrl(request.typeUrl)) {
        return refuse({
          code: 'INVALID_ARGUMENT',
          message: `type URL ${excerpt(request.typeUrl, 160)} is not served by Chancery${node ? ` (node ${node})` : ''}; it serves ${PUSH_ORDER.join(', ')}`,
        });
      }
      const typed = request as TypedRequest;
      if (node === undefined) {
        // xDS: only the first request on a stream is guaranteed to carry the node.
        if (request.nodeId === undefined) {
          return refuse({ code: 'INVALID_ARGUMENT', message: 'the first DiscoveryRequest on a stream must carry node.id (<mesh>.<name>)' });
        }
        node = request.nodeId;
        logger.debug({ node, stream: streamId, peer: call.getPeer(), typeUrl: typed.typeUrl }, 'stream opened');
        gateway.open({ id: streamId, peer: call.getPeer(), openedAt: now() }, writer, node, typed);
        return;
      }
      const kind = request.errorDetail ? 'xds.nacked' : request.responseNonce !== '' ? 'xds.acked' : 'xds.requested';
      gateway.request(node, streamId, kind, typed);
    });
    call.on('end', () => {
      close('client closed the stream');
      call.end();
    });
    call.on('cancelled', () => close('stream cancelled'));
    // A status this server ends the stream with arrives here too, as `details`.
    call.on('error', (error: Error & { details?: string }) => close(`stream ended: ${error.details ?? error.message}`));
    call.on('close', () => close('stream closed'));
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
