import { ChanceryError } from '../chancery-error.js';
import { contentHash } from './content-hash.js';
import { lookupType } from './protos.js';
import { messageName, type TypeUrl } from './type-urls.js';

/**
 * One xDS resource, encoded once. `any` holds the bytes of a `google.protobuf.Any` wrapping
 * the resource, ready to be placed in any number of responses for any number of nodes.
 */
export interface EncodedResource {
  readonly typeUrl: TypeUrl;
  readonly name: string;
  /** Content hash of the encoded resource: its per-resource version (Delta uses it). */
  readonly version: string;
  readonly any: Uint8Array;
  /**
   * Names this resource needs of the next type in the chain: the RouteConfigurations a
   * Listener names over RDS, the ClusterLoadAssignments a Cluster names over EDS (I5).
   */
  readonly references: readonly string[];
}

export class InvalidResourceError extends ChanceryError {
  readonly code = 'CHANCERY_XDS_INVALID_RESOURCE';
  constructor(
    readonly typeUrl: TypeUrl,
    readonly resourceName: string,
    reason: string,
  ) {
    super(`${typeUrl} ${resourceName}: ${reason}`);
  }
}

// Interned by content: a resource built twice (for two nodes, or twice for one) is one object
// with one set of bytes. Entries go when the last snapshot holding them is collected.
const interned = new Map<string, WeakRef<EncodedResource>>();
const release = new FinalizationRegistry<string>((key) => {
  if (interned.get(key)?.deref() === undefined) interned.delete(key);
});
let encodings = 0;

/**
 * Encodes a resource given as a plain object in protobufjs JSON form (enum names, nested
 * `Any` as `{ '@type': url, ...fields }`). Throws `InvalidResourceError` on a message that
 * does not verify: that is a generator bug, never user input.
 */
export function encodeResource(
  typeUrl: TypeUrl,
  name: string,
  message: object,
  references: readonly string[] = [],
): EncodedResource {
  const type = lookupType(messageName(typeUrl));
  const typed = type.fromObject(message);
  const problem = type.verify(typed);
  if (problem) throw new InvalidResourceError(typeUrl, name, problem);
  const value = type.encode(typed).finish();
  encodings++;
  const version = contentHash(typeUrl, value);
  const existing = interned.get(version)?.deref();
  if (existing) return existing;
  const resource: EncodedResource = Object.freeze({
    typeUrl,
    name,
    version,
    any: encodeAny(typeUrl, value),
    references: Object.freeze([...references]),
  });
  interned.set(version, new WeakRef(resource));
  release.register(resource, version);
  return resource;
}

/** How many resources have been encoded since start; for tests and benchmarks. */
export function encodeCount(): number {
  return encodings;
}

function encodeAny(typeUrl: string, value: Uint8Array): Uint8Array {
  const url = Buffer.from(typeUrl, 'utf8');
  return Buffer.concat([lengthDelimited(1, url), lengthDelimited(2, value)]);
}

/** A length-delimited protobuf field (wire type 2): tag, varint length, bytes. */
export function lengthDelimited(field: number, bytes: Uint8Array): Buffer {
  const tag = (field << 3) | 2;
  const out = Buffer.allocUnsafe(varintSize(tag) + varintSize(bytes.length) + bytes.length);
  const at = writeVarint(out, writeVarint(out, 0, tag), bytes.length);
  out.set(bytes, at);
  return out;
}

/** Bytes a varint of `value` (0 to 2³²−1) takes. */
export function varintSize(value: number): number {
  let size = 1;
  for (let rest = value >>> 7; rest > 0; rest >>>= 7) size++;
  return size;
}

/** Writes `value` as a varint at `at`; returns where the next byte goes. */
export function writeVarint(out: Uint8Array, at: number, value: number): number {
  let rest = value >>> 0;
  while (rest > 0x7f) {
    out[at++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  out[at++] = rest;
  return at;
}
