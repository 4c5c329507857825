import { Client, credentials, Metadata, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { decodeResponse, type DecodedResponse } from '../../src/xds/decode.js';
import { encodeRequest, type XdsRequest } from '../../src/xds/xds-request.js';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

export interface StreamEnd {
  readonly code: number;
  readonly details: string;
}

/**
 * A scripted raw ADS client over real gRPC: it sends exactly the requests a test writes and
 * records every response, so tests can assert on the wire.
 */
export class AdsStream {
  readonly responses: DecodedResponse[] = [];
  readonly #call: ClientDuplexStream<Uint8Array, Uint8Array>;
  readonly #waiters: Array<() => void> = [];
  #end: StreamEnd | undefined;

  constructor(readonly client: Client) {
    this.#call = client.makeBidiStreamRequest(
      ADS_PATH,
      (value: Uint8Array) => Buffer.from(value),
      (bytes: Buffer) => bytes,
      new Metadata(),
    );
    this.#call.on('data', (bytes: Buffer) => {
      this.responses.push(decodeResponse(bytes));
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

  /** Opens a stream on a new client (its own HTTP/2 connection) to `address`. */
  static open(address: string): AdsStream {
    return new AdsStream(new Client(address, credentials.createInsecure()));
  }

  get ended(): StreamEnd | undefined {
    return this.#end;
  }

  send(request: Partial<XdsRequest> & { typeUrl: string }): void {
    this.#call.write(encodeRequest(request));
  }

  /** Sends one message of exactly these bytes: a request encoded by hand, or not a request at all. */
  sendBytes(bytes: Uint8Array): void {
    this.#call.write(bytes);
  }

  /** ACKs a response: its version and nonce, with the names given (or none). */
  ack(response: DecodedResponse, resourceNames: readonly string[] = []): void {
    this.send({ typeUrl: response.typeUrl, versionInfo: response.versionInfo, responseNonce: response.nonce, resourceNames });
  }

  /** Resolves once `count` responses in total have arrived (or rejects when the stream ends first). */
  async nextResponse(count = this.responses.length + 1): Promise<DecodedResponse> {
    await this.until(() => this.responses.length >= count, `response #${count}`);
    return this.responses[count - 1]!;
  }

  /** Waits for a condition re-checked on every response and at stream end. */
  async until(condition: () => boolean, what: string): Promise<void> {
    while (!condition()) {
      if (this.#end) throw new Error(`stream ended (${this.#end.code} ${this.#end.details}) while waiting for ${what}`);
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Resolves with the status once the server ends the stream. */
  async ending(): Promise<StreamEnd> {
    while (!this.#end) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    return this.#end;
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
