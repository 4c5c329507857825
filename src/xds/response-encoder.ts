import { type EncodedResource, lengthDelimited, varintSize, writeVarint } from './encode.js';
import type { DeltaResponse, SotwResponse, XdsResponse } from './ledger.js';

// DiscoveryResponse field numbers (envoy/service/discovery/v3/discovery.proto).
const VERSION_INFO = 1;
const RESOURCES = 2;
const TYPE_URL = 4;
const NONCE = 5;
const CONTROL_PLANE = 6;

// DeltaDiscoveryResponse and Resource field numbers (same file).
const DELTA_SYSTEM_VERSION_INFO = 1;
const DELTA_RESOURCES = 2;
const DELTA_TYPE_URL = 4;
const DELTA_NONCE = 5;
const DELTA_REMOVED_RESOURCES = 6;
const DELTA_CONTROL_PLANE = 7;
const RESOURCE_VERSION = 1;
const RESOURCE_RESOURCE = 2;
const RESOURCE_NAME = 3;

/** A part of a response: a field encoded before (cached), or a field written now around text or bytes. */
type Part = Uint8Array | { readonly field: number; readonly text: string } | { readonly field: number; readonly bytes: Uint8Array };

/**
 * Encodes DiscoveryResponses and DeltaDiscoveryResponses by hand around the resources' shared
 * `Any` bytes (I6: encode once); a Delta `Resource` (name, version, the resource) is cached per
 * resource. A response is one allocation: its size is summed first and every part copied into
 * place (bench/README.md: building it from concatenated pieces cost a third of a push's own
 * CPU). Nothing per node is kept: a node's own listeners and clusters are sent rarely, and a
 * cached copy of them would live as long as the session.
 */
export class ResponseEncoder {
  readonly #controlPlane: Buffer;
  readonly #deltaControlPlane: Buffer;
  readonly #typeUrls = new Map<string, Buffer>();
  readonly #deltaResources = new WeakMap<EncodedResource, Buffer>();

  /** `identifier` goes into `control_plane.identifier`, naming the instance that answered. */
  constructor(identifier: string) {
    const controlPlane = lengthDelimited(1, Buffer.from(identifier, 'utf8'));
    this.#controlPlane = lengthDelimited(CONTROL_PLANE, controlPlane);
    this.#deltaControlPlane = lengthDelimited(DELTA_CONTROL_PLANE, controlPlane);
  }

  encode(response: XdsResponse): Buffer {
    return writeParts(response.protocol === 'sotw' ? this.#sotw(response) : this.#delta(response));
  }

  #sotw(response: SotwResponse): Part[] {
    return [
      { field: VERSION_INFO, text: response.version },
      ...response.resources.map((resource) => ({ field: RESOURCES, bytes: resource.any })),
      this.#typeUrl(TYPE_URL, response.typeUrl),
      { field: NONCE, text: response.nonce },
      this.#controlPlane,
    ];
  }

  #delta(response: DeltaResponse): Part[] {
    return [
      { field: DELTA_SYSTEM_VERSION_INFO, text: response.version },
      ...response.resources.map((resource) => this.#deltaResource(resource)),
      this.#typeUrl(DELTA_TYPE_URL, response.typeUrl),
      { field: DELTA_NONCE, text: response.nonce },
      ...response.removed.map((name) => ({ field: DELTA_REMOVED_RESOURCES, text: name })),
      this.#deltaControlPlane,
    ];
  }

  #deltaResource(resource: EncodedResource): Buffer {
    let encoded = this.#deltaResources.get(resource);
    if (!encoded) {
      const wrapper = Buffer.concat([
        lengthDelimited(RESOURCE_VERSION, Buffer.from(resource.version, 'utf8')),
        lengthDelimited(RESOURCE_RESOURCE, resource.any),
        lengthDelimited(RESOURCE_NAME, Buffer.from(resource.name, 'utf8')),
      ]);
      encoded = lengthDelimited(DELTA_RESOURCES, wrapper);
      this.#deltaResources.set(resource, encoded);
    }
    return encoded;
  }

  /** A type URL field, cached by field number and URL (both messages put it in field 4). */
  #typeUrl(field: number, typeUrl: string): Buffer {
    const key = `${field}\n${typeUrl}`;
    let encoded = this.#typeUrls.get(key);
    if (!encoded) {
      encoded = lengthDelimited(field, Buffer.from(typeUrl, 'utf8'));
      this.#typeUrls.set(key, encoded);
    }
    return encoded;
  }
}

/** The parts, in order, in one buffer of exactly their size. */
function writeParts(parts: readonly Part[]): Buffer {
  const lengths = new Array<number>(parts.length);
  let size = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part instanceof Uint8Array) size += part.length;
    else {
      const length = 'text' in part ? Buffer.byteLength(part.text, 'utf8') : part.bytes.length;
      lengths[i] = length;
      size += varintSize((part.field << 3) | 2) + varintSize(length) + length;
    }
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part instanceof Uint8Array) {
      out.set(part, at);
      at += part.length;
    } else {
      at = writeVarint(out, at, (part.field << 3) | 2);
      at = writeVarint(out, at, lengths[i]!);
      if ('text' in part) at += out.write(part.text, at, 'utf8');
      else {
        out.set(part.bytes, at);
        at += part.bytes.length;
      }
    }
  }
  return out;
}
