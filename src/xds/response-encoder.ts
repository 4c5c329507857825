import { type EncodedResource, lengthDelimited } from './encode.js';
import type { XdsResponse } from './stream-ledger.js';

// DiscoveryResponse field numbers (envoy/service/discovery/v3/discovery.proto).
const VERSION_INFO = 1;
const RESOURCES = 2;
const TYPE_URL = 4;
const NONCE = 5;
const CONTROL_PLANE = 6;

/**
 * Encodes DiscoveryResponses by hand around the resources' shared `Any` bytes, so a push
 * allocates the envelope and nonce only (I6: encode once). The resources part of a response
 * is cached per resource list, which is one shared array for every wildcard subscriber.
 */
export class ResponseEncoder {
  readonly #controlPlane: Buffer;
  readonly #typeUrls = new Map<string, Buffer>();
  readonly #bodies = new WeakMap<readonly EncodedResource[], Buffer>();

  /** `identifier` goes into `control_plane.identifier`, naming the instance that answered. */
  constructor(identifier: string) {
    this.#controlPlane = lengthDelimited(CONTROL_PLANE, lengthDelimited(1, Buffer.from(identifier, 'utf8')));
  }

  encode(response: XdsResponse): Buffer {
    let typeUrl = this.#typeUrls.get(response.typeUrl);
    if (!typeUrl) {
      typeUrl = lengthDelimited(TYPE_URL, Buffer.from(response.typeUrl, 'utf8'));
      this.#typeUrls.set(response.typeUrl, typeUrl);
    }
    let body = this.#bodies.get(response.resources);
    if (!body) {
      body = Buffer.concat(response.resources.map((resource) => lengthDelimited(RESOURCES, resource.any)));
      this.#bodies.set(response.resources, body);
    }
    return Buffer.concat([
      lengthDelimited(VERSION_INFO, Buffer.from(response.version, 'utf8')),
      body,
      typeUrl,
      lengthDelimited(NONCE, Buffer.from(response.nonce, 'utf8')),
      this.#controlPlane,
    ]);
  }
}
