/**
 * Just enough of the xDS wire format for a fleet of 10,000 fake Envoys, State of the World and
 * Delta: requests are written by hand from pre-encoded parts, and a response is read for its
 * version, nonce and type URL only, its resources skipped unread. Decoding every response to
 * JSON (test/support/ads-client.ts) costs more CPU than the server under test.
 */

import { lengthDelimited } from '../../src/xds/encode.js';

/** Which ADS method a fake Envoy streams on. */
export type WireProtocol = 'sotw' | 'delta';

export const ADS_PATHS: Record<WireProtocol, string> = {
  sotw: '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
  delta: '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources',
};

// envoy/service/discovery/v3/discovery.proto field numbers.
const NODE_ID = 1;
const SOTW = { versionInfo: 1, node: 2, resourceNames: 3, typeUrl: 4, responseNonce: 5 } as const;
const DELTA = { node: 1, typeUrl: 2, subscribe: 3, responseNonce: 6 } as const;
// DiscoveryResponse and DeltaDiscoveryResponse agree on these three: version_info and
// system_version_info are 1, type_url 4, nonce 5.
const RESPONSE_VERSION = 1;
const RESPONSE_TYPE_URL = 4;
const RESPONSE_NONCE = 5;

/** A length-delimited field (wire type 2) holding `bytes`: Chancery's own encoder, given text too. */
export function field(number: number, bytes: Uint8Array | string): Buffer {
  return lengthDelimited(number, typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes);
}

/** The requests of one type on one stream, their fixed parts encoded once. */
export interface RequestTemplate {
  /** The first request of a stream: subscribes and carries `node.id` (SotW: and, after a reconnect, the version held). */
  first(nodeId: string, version?: string): Buffer;
  /** A subscription without a nonce; after a reconnect a SotW Envoy names the version it holds. */
  subscribe(version?: string): Buffer;
  /** Accepts a response. */
  ack(version: string, nonce: string): Buffer;
}

/** `resourceNames` empty: the wildcard (legacy, in both protocols). */
export function requestTemplate(protocol: WireProtocol, typeUrl: string, resourceNames: readonly string[] = []): RequestTemplate {
  return protocol === 'sotw' ? new SotwRequests(typeUrl, resourceNames) : new DeltaRequests(typeUrl, resourceNames);
}

class SotwRequests implements RequestTemplate {
  readonly #typeUrl: Buffer;
  readonly #names: Buffer;

  constructor(typeUrl: string, resourceNames: readonly string[]) {
    this.#typeUrl = field(SOTW.typeUrl, typeUrl);
    this.#names = Buffer.concat(resourceNames.map((name) => field(SOTW.resourceNames, name)));
  }

  first(nodeId: string, version = ''): Buffer {
    return Buffer.concat([held(version), field(SOTW.node, field(NODE_ID, nodeId)), this.#names, this.#typeUrl]);
  }

  subscribe(version = ''): Buffer {
    return Buffer.concat([held(version), this.#names, this.#typeUrl]);
  }

  /** SotW repeats the subscription with the version and nonce it accepts. */
  ack(version: string, nonce: string): Buffer {
    return Buffer.concat([field(SOTW.versionInfo, version), this.#names, this.#typeUrl, field(SOTW.responseNonce, nonce)]);
  }
}

class DeltaRequests implements RequestTemplate {
  readonly #typeUrl: Buffer;
  readonly #subscribe: Buffer;

  constructor(typeUrl: string, resourceNames: readonly string[]) {
    this.#typeUrl = field(DELTA.typeUrl, typeUrl);
    this.#subscribe = Buffer.concat([this.#typeUrl, ...resourceNames.map((name) => field(DELTA.subscribe, name))]);
  }

  first(nodeId: string): Buffer {
    return Buffer.concat([field(DELTA.node, field(NODE_ID, nodeId)), this.#subscribe]);
  }

  subscribe(): Buffer {
    return this.#subscribe;
  }

  /** Delta ACKs by nonce alone; the subscription stands until changed. */
  ack(_version: string, nonce: string): Buffer {
    return Buffer.concat([this.#typeUrl, field(DELTA.responseNonce, nonce)]);
  }
}

const NOTHING = Buffer.alloc(0);

function held(version: string): Buffer {
  return version === '' ? NOTHING : field(SOTW.versionInfo, version);
}

/** The three fields of a response a fake Envoy acts on (Delta: the system version). */
export interface ResponseHeader {
  version: string;
  typeUrl: string;
  nonce: string;
}

/**
 * Reads the version, type URL and nonce of an encoded DiscoveryResponse or DeltaDiscoveryResponse
 * into `into`, skipping every other field (the resources) without decoding it.
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
        if (number === RESPONSE_VERSION) into.version = buffer.toString('latin1', start, cursor);
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

/** The type URL of an encoded request, and whether it carries a response nonce (an ACK or NACK), for the ceiling server. */
export function readRequestKind(protocol: WireProtocol, bytes: Uint8Array): { typeUrl: string; answering: boolean } {
  const fields = protocol === 'sotw' ? SOTW : DELTA;
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let typeUrl = '';
  let answering = false;
  cursor = 0;
  while (cursor < buffer.length) {
    const key = readVarint(buffer);
    const number = key >>> 3;
    const wireType = key & 7;
    if (wireType === 0) {
      readVarint(buffer);
      continue;
    }
    if (wireType !== 2) throw new Error(`DiscoveryRequest: unexpected wire type ${wireType} of field ${number}`);
    const length = readVarint(buffer);
    if (number === fields.typeUrl) typeUrl = buffer.toString('latin1', cursor, cursor + length);
    else if (number === fields.responseNonce && length > 0) answering = true;
    cursor += length;
  }
  return { typeUrl, answering };
}

// Read position of the readers; each thread is single-threaded and the readers not reentrant.
let cursor = 0;

function readVarint(buffer: Buffer): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = buffer[cursor++];
    if (byte === undefined) throw new Error('xDS message: truncated varint');
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 128;
  }
}
