/**
 * gRPC's length-prefixed messages on an HTTP/2 stream (gRPC over HTTP/2, "Length-Prefixed-Message"):
 * a compressed-flag byte (always 0 here), a 4-byte big-endian length, then the message. The bench
 * fleet speaks it over Node's own HTTP/2 client, as Envoy speaks it over its own codec, so that the
 * fleet costs less CPU than the server it measures.
 */

const PREFIX = 5;

/** `message` with its gRPC prefix, ready to write to a stream. */
export function framed(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(PREFIX + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, PREFIX);
  return out;
}

/**
 * Cuts a stream's DATA chunks into messages. A chunk may hold several messages, or part of one;
 * the usual case, whole messages, is handed out as views without copying.
 */
export class MessageReader {
  #pending: Buffer | undefined;

  constructor(readonly onMessage: (message: Buffer) => void) {}

  push(chunk: Buffer): void {
    const buffer = this.#pending === undefined ? chunk : Buffer.concat([this.#pending, chunk]);
    this.#pending = undefined;
    let offset = 0;
    while (buffer.length - offset >= PREFIX) {
      if (buffer[offset] !== 0) throw new Error(`a compressed gRPC message (flag ${buffer[offset]}), which the bench never asks for`);
      const length = buffer.readUInt32BE(offset + 1);
      const end = offset + PREFIX + length;
      if (end > buffer.length) break;
      this.onMessage(buffer.subarray(offset + PREFIX, end));
      offset = end;
    }
    if (offset < buffer.length) this.#pending = buffer.subarray(offset);
  }
}
