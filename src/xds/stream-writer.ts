import { status as grpcStatus, type ServerDuplexStream } from '@grpc/grpc-js';
import { clip } from '../common/index.js';
import type { ResponseEncoder } from './response-encoder.js';
import type { XdsResponse } from './stream/index.js';

/** A gRPC status to end a stream with; the message names the node and why. */
export interface EndStatus {
  readonly code: 'INVALID_ARGUMENT' | 'RESOURCE_EXHAUSTED' | 'NOT_FOUND' | 'ABORTED' | 'UNAVAILABLE' | 'UNIMPLEMENTED' | 'UNAUTHENTICATED' | 'PERMISSION_DENIED' | 'INTERNAL';
  readonly message: string;
}

/**
 * The most characters of a status message sent. The message travels in an HTTP/2 trailer,
 * and one larger than the client's header limit is never delivered: the client sees no status
 * at all (issue 11). Messages quote values cut short already; this holds for any message.
 */
export const MAX_STATUS_MESSAGE = 1_024;

/** Where a session's intents for one stream go. */
export interface StreamSink {
  /** Writes the response; returns the bytes written, 0 once the stream has ended. */
  send(response: XdsResponse): number;
  end(status: EndStatus): void;
}

/**
 * Writes a session's responses to one gRPC stream, in the order they were decided. Once the
 * stream has ended or closed, nothing more is written: a tick or a store change can never
 * write to a closed stream (kuma#13626).
 */
export class StreamWriter implements StreamSink {
  #open = true;
  #answered: (() => void) | undefined;

  /** `answered` is called once, with the stream's first response or its status, whichever comes first. */
  constructor(
    readonly call: ServerDuplexStream<unknown, Uint8Array>,
    readonly encoder: ResponseEncoder,
    answered?: () => void,
  ) {
    this.#answered = answered;
  }

  get open(): boolean {
    return this.#open;
  }

  send(response: XdsResponse): number {
    if (!this.#open) return 0;
    const bytes = this.encoder.encode(response);
    this.call.write(bytes);
    this.#answer();
    return bytes.length;
  }

  end(status: EndStatus): void {
    if (!this.#open) return;
    this.#open = false;
    this.#answer();
    // `clip` marks a cut with one more character: the message sent, `…` included, has at most MAX_STATUS_MESSAGE.
    this.call.emit('error', { code: grpcStatus[status.code], details: clip(status.message, MAX_STATUS_MESSAGE - 1) });
  }

  #answer(): void {
    const answered = this.#answered;
    if (answered === undefined) return;
    this.#answered = undefined;
    answered();
  }

  /** The stream closed from the other side; drop anything still owed. */
  closed(): void {
    this.#open = false;
  }
}
