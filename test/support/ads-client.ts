import { Client, credentials, Metadata, type ChannelCredentials, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import {
  decodeDeltaResponse,
  decodeResponse,
  encodeDeltaRequest,
  encodeRequest,
  type DecodedDeltaResponse,
  type DecodedResponse,
  type DeltaRequest,
  type XdsRequest,
} from '../../src/xds/index.js';
import { budget } from './budget.js';

const ADS = '/envoy.service.discovery.v3.AggregatedDiscoveryService';

/** How long a wait on a stream lasts before it fails naming what it waited for. */
export const STREAM_WAIT_MS = budget(10_000);

export interface StreamEnd {
  readonly code: number;
  readonly details: string;
}

/** How one ADS method is spoken: its path, how requests are written and responses read. */
interface Dialect<TRequest, TResponse> {
  readonly path: string;
  encode(request: TRequest): Uint8Array;
  decode(bytes: Uint8Array): TResponse;
}

type SotwRequest = Partial<Omit<XdsRequest, 'protocol'>> & { typeUrl: string };
type DeltaRequestInput = Partial<Omit<DeltaRequest, 'protocol'>> & { typeUrl: string };

const SOTW: Dialect<SotwRequest, DecodedResponse> = { path: `${ADS}/StreamAggregatedResources`, encode: encodeRequest, decode: decodeResponse };
const DELTA: Dialect<DeltaRequestInput, DecodedDeltaResponse> = { path: `${ADS}/DeltaAggregatedResources`, encode: encodeDeltaRequest, decode: decodeDeltaResponse };

/**
 * A scripted raw ADS client over real gRPC: it sends exactly the requests a test writes and
 * records every response, so tests can assert on the wire. `AdsStream` speaks State of the
 * World, `DeltaStream` Delta.
 */
class XdsStream<TRequest, TResponse> {
  readonly responses: TResponse[] = [];
  readonly #call: ClientDuplexStream<Uint8Array, Uint8Array>;
  readonly #dialect: Dialect<TRequest, TResponse>;
  readonly #waiters: Array<() => void> = [];
  readonly #listeners: Array<(response: TResponse) => void> = [];
  #end: StreamEnd | undefined;

  constructor(readonly client: Client, dialect: Dialect<TRequest, TResponse>, metadata = new Metadata()) {
    this.#dialect = dialect;
    this.#call = client.makeBidiStreamRequest(
      dialect.path,
      (value: Uint8Array) => Buffer.from(value),
      (bytes: Buffer) => bytes,
      metadata,
    );
    this.#call.on('data', (bytes: Buffer) => {
      const response = dialect.decode(bytes);
      this.responses.push(response);
      for (const listener of this.#listeners) listener(response);
      this.#wake();
    });
    this.#call.on('error', (error: ServiceError) => {
      this.#end ??= { code: error.code, details: error.details };
      this.#wake();
    });
    this.#call.on('status', (status: { code: number; details: string }) => {
      this.#end ??= { code: status.code, details: status.details };
      this.#wake();
    });
  }

  get ended(): StreamEnd | undefined {
    return this.#end;
  }

  /** Calls `listener` with every response from now on, as it arrives (before any waiter wakes). */
  onResponse(listener: (response: TResponse) => void): void {
    this.#listeners.push(listener);
  }

  send(request: TRequest): void {
    this.#call.write(this.#dialect.encode(request));
  }

  /** Sends one message of exactly these bytes: a request encoded by hand, or not a request at all. */
  sendBytes(bytes: Uint8Array): void {
    this.#call.write(bytes);
  }

  /** Resolves once `count` responses in total have arrived; rejects when the stream ends first or after `timeoutMs`. */
  async nextResponse(count = this.responses.length + 1, timeoutMs = STREAM_WAIT_MS): Promise<TResponse> {
    await this.until(() => this.responses.length >= count, `response #${count}`, timeoutMs);
    return this.responses[count - 1]!;
  }

  /**
   * Waits for a condition re-checked on every response and at stream end; rejects when the
   * stream ends first, or after `timeoutMs`, naming `what` it waited for.
   */
  async until(condition: () => boolean, what: string, timeoutMs = STREAM_WAIT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (this.#end) throw new Error(`stream ended (${this.#end.code} ${this.#end.details}) while waiting for ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms (${this.responses.length} responses so far)`);
      await this.#wait(left);
    }
  }

  /** Resolves with the status once the server ends the stream; rejects after `timeoutMs`, naming `what` it waited for. */
  async ending(what = 'the stream’s end', timeoutMs = STREAM_WAIT_MS): Promise<StreamEnd> {
    const deadline = Date.now() + timeoutMs;
    while (!this.#end) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms (${this.responses.length} responses so far)`);
      await this.#wait(left);
    }
    return this.#end;
  }

  /** Until the next response or end, or `ms`, whichever comes first. */
  #wait(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Cancels this stream; the connection stays for other streams on it. */
  cancel(): void {
    this.#call.cancel();
  }

  /** Half-closes and cancels the stream, and closes the client's connection. */
  close(): void {
    this.#call.cancel();
    this.client.close();
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }
}

/** How a test stream proves who it is: `authorization` metadata values, and the channel's credentials (TLS). */
export interface StreamCredentials {
  /** Each value is sent as one `authorization` metadata entry: `Bearer <token>`. */
  readonly authorization?: string | readonly string[];
  readonly channel?: ChannelCredentials;
}

function metadataOf({ authorization }: StreamCredentials): Metadata {
  const metadata = new Metadata();
  for (const value of [authorization ?? []].flat()) metadata.add('authorization', value);
  return metadata;
}

function clientOf(address: string, { channel }: StreamCredentials): Client {
  return new Client(address, channel ?? credentials.createInsecure());
}

/** A scripted SotW ADS stream (StreamAggregatedResources). */
export class AdsStream extends XdsStream<SotwRequest, DecodedResponse> {
  constructor(client: Client, metadata?: Metadata) {
    super(client, SOTW, metadata);
  }

  /** Opens a stream on a new client (its own HTTP/2 connection) to `address`. */
  static open(address: string, streamCredentials: StreamCredentials = {}): AdsStream {
    return new AdsStream(clientOf(address, streamCredentials), metadataOf(streamCredentials));
  }

  /** ACKs a response: its version and nonce, with the names given (or none). */
  ack(response: DecodedResponse, resourceNames: readonly string[] = []): void {
    this.send({ typeUrl: response.typeUrl, versionInfo: response.versionInfo, responseNonce: response.nonce, resourceNames });
  }
}

/** A scripted Delta ADS stream (DeltaAggregatedResources). */
export class DeltaStream extends XdsStream<DeltaRequestInput, DecodedDeltaResponse> {
  constructor(client: Client, metadata?: Metadata) {
    super(client, DELTA, metadata);
  }

  static open(address: string, streamCredentials: StreamCredentials = {}): DeltaStream {
    return new DeltaStream(clientOf(address, streamCredentials), metadataOf(streamCredentials));
  }

  /** ACKs a response by its nonce: in Delta, nothing else says what is ACKed. */
  ack(response: DecodedDeltaResponse): void {
    this.send({ typeUrl: response.typeUrl, responseNonce: response.nonce });
  }
}
