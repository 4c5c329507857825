/**
 * Just enough of the DiscoveryRequest / DiscoveryResponse wire format for a fleet of 10,000
 * fake Envoys: requests are written by hand from pre-encoded parts, and a response is read
 * for its version, nonce and type URL only, its resources skipped unread. Decoding every
 * response to JSON (test/support/ads-client.ts) costs more CPU than the server under test.
 */

import { lengthDelimited } from '../../src/xds/encode.js';

// envoy/service/discovery/v3/discovery.proto field numbers.
const REQUEST_VERSION_INFO = 1;
const REQUEST_NODE = 2;
const REQUEST_RESOURCE_NAMES = 3;
const REQUEST_TYPE_URL = 4;
const REQUEST_RESPONSE_NONCE = 5;
const NODE_ID = 1;
const RESPONSE_VERSION_INFO = 1;
const RESPONSE_TYPE_URL = 4;
const RESPONSE_NONCE = 5;

/** A length-delimited field (wire type 2) holding `bytes`: Chancery's own encoder, given text too. */
export function field(number: number, bytes: Uint8Array | string): Buffer {
  return lengthDelimited(number, typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes);
}

/** The fixed parts of one type's requests on one stream, encoded once. */
export class RequestTemplate {
  readonly #typeUrl: Buffer;
  readonly #names: Buffer;

  constructor(typeUrl: string, resourceNames: readonly string[] = []) {
    this.#typeUrl = field(REQUEST_TYPE_URL, typeUrl);
    this.#names = Buffer.concat(resourceNames.map((name) => field(REQUEST_RESOURCE_NAMES, name)));
  }

  /** The first request of a stream: subscribes and carries `node.id` (and, after a reconnect, the version held). */
  first(nodeId: string, version = ''): Buffer {
    return Buffer.concat([held(version), field(REQUEST_NODE, field(NODE_ID, nodeId)), this.#names, this.#typeUrl]);
  }

  /** A subscription request without a nonce; after a reconnect Envoy names the version it holds. */
  subscribe(version = ''): Buffer {
    return Buffer.concat([held(version), this.#names, this.#typeUrl]);
  }

  /** Accepts a response: its version and nonce, with the same subscription (SotW repeats it). */
  ack(version: string, nonce: string): Buffer {
    return Buffer.concat([field(REQUEST_VERSION_INFO, version), this.#names, this.#typeUrl, field(REQUEST_RESPONSE_NONCE, nonce)]);
  }
}

const NOTHING = Buffer.alloc(0);

function held(version: string): Buffer {
  return version === '' ? NOTHING : field(REQUEST_VERSION_INFO, version);
}

/** The three fields of a DiscoveryResponse a fake Envoy acts on. */
export interface ResponseHeader {
  version: string;
  typeUrl: string;
  nonce: string;
}

/**
 * Reads version_info, type_url and nonce from an encoded DiscoveryResponse into `into`,
 * skipping every other field (the resources) without decoding it.
 */
export function readResponseHeader(bytes: Uint8Array, into: ResponseHeader): ResponseHeader {
  into.version = '';
  into.typeUrl = '';
  into.nonce = '';
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  cursor = 0;
  while (cursor < buffer.length) {
    const key = readVarint(buffer);
    const number = key >>> 3;
    switch (key & 7) {
      case 0:
        readVarint(buffer);
        break;
      case 1:
        cursor += 8;
        break;
      case 5:
        cursor += 4;
        break;
      case 2: {
        const length = readVarint(buffer);
        const start = cursor;
        cursor += length;
        if (number === RESPONSE_VERSION_INFO) into.version = buffer.toString('latin1', start, cursor);
        else if (number === RESPONSE_TYPE_URL) into.typeUrl = buffer.toString('latin1', start, cursor);
        else if (number === RESPONSE_NONCE) into.nonce = buffer.toString('latin1', start, cursor);
        break;
      }
      default:
        throw new Error(`DiscoveryResponse: unsupported wire type ${key & 7} of field ${number}`);
    }
  }
  return into;
}

// Read position of readResponseHeader; the fleet is single-threaded and the reader not reentrant.
let cursor = 0;

function readVarint(buffer: Buffer): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = buffer[cursor++];
    if (byte === undefined) throw new Error('DiscoveryResponse: truncated varint');
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 128;
  }
}
