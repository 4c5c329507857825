import { ChanceryError } from '../common/index.js';
import { contentHash } from './content-hash.js';
import { InternTable } from './intern-table.js';
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
  /** The Secrets a Listener or Cluster names over SDS (I8); empty for the other types. */
  readonly secrets: readonly string[];
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

const NONE: readonly string[] = Object.freeze([]);

// Interned by content: a resource built twice (for two nodes, or twice for one) is one object
// with one set of bytes. Entries go when the last snapshot holding them is collected.
const interned = new InternTable<EncodedResource>();
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
  secrets: readonly string[] = NONE,
): EncodedResource {
  const type = lookupType(messageName(typeUrl));
  const typed = type.fromObject(message);
  const problem = type.verify(typed);
  if (problem) throw new InvalidResourceError(typeUrl, name, problem);
  const value = type.encode(typed).finish();
  encodings++;
  const version = contentHash(typeUrl, value);
  const existing = interned.get(version);
  if (existing) return existing;
  return interned.intern(
    version,
    Object.freeze({
      typeUrl,
      name,
      version,
      any: encodeAny(typeUrl, value),
      references: Object.freeze([...references]),
      secrets: secrets === NONE ? NONE : Object.freeze([...secrets]),
    }),
  );
}

/**
 * An embedded `google.protobuf.Any` of `messageName`, encoded now: the bytes protobufjs makes of
 * `{ '@type': url, ...fields }`, without the lookup of the type by name it does for every one
 * (7 % of generating a node's resources for the first time).
 */
export function anyOf(messageName: string, fields: object = {}): { readonly type_url: string; readonly value: Uint8Array } {
  const type = lookupType(messageName);
  return { type_url: `type.googleapis.com/${messageName}`, value: type.encode(type.fromObject(fields)).finish() };
}

/** How many resources have been encoded since start; for tests and benchmarks. */
export function encodeCount(): number {
  return encodings;
}

function encodeAny(typeUrl: string, value: Uint8Array): Uint8Array {
  return encodeFields(
    [
      { field: 1, text: typeUrl },
      { field: 2, bytes: value },
    ],
    KEPT,
  );
}

/**
 * A part of a message: bytes encoded before (whole fields, cached), or a length-delimited field
 * (wire type 2) written now around text (UTF-8) or bytes.
 */
export type FieldPart = Uint8Array | { readonly field: number; readonly text: string } | { readonly field: number; readonly bytes: Uint8Array };

/** How an encoding gets its buffer: a slice of Node's shared pool (`Buffer.allocUnsafe`) or memory of its own. */
export type Allocate = (size: number) => Buffer;

/**
 * For bytes kept as long as what holds them (a resource, a cached part of a response): memory of
 * their own. A small slice of Node's 8 KB pool keeps the whole slab alive: 20,000 nodes' own
 * resources kept 3,244 slabs, 26.6 MB, for bytes a tenth of that (bench/README.md).
 */
export const KEPT: Allocate = (size) => Buffer.allocUnsafeSlow(size);

/**
 * The parts, in order, in one buffer of exactly their size: the size is summed first and every
 * part copied into place (bench/README.md: concatenating pieces cost a third of a push's own CPU).
 * A response, written and let go, takes a slice of Node's pool; bytes that are kept, `KEPT`.
 */
export function encodeFields(parts: readonly FieldPart[], allocate: Allocate = Buffer.allocUnsafe): Buffer {
  const lengths = new Array<number>(parts.length);
  let size = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part instanceof Uint8Array) size += part.length;
    else {
      const length = 'text' in part ? Buffer.byteLength(part.text, 'utf8') : part.bytes.length;
      lengths[i] = length;
      size += varintSize(tagOf(part.field)) + varintSize(length) + length;
    }
  }
  const out = allocate(size);
  let at = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part instanceof Uint8Array) {
      out.set(part, at);
      at += part.length;
    } else {
      at = writeVarint(out, writeVarint(out, at, tagOf(part.field)), lengths[i]!);
      if ('text' in part) at += out.write(part.text, at, 'utf8');
      else {
        out.set(part.bytes, at);
        at += part.bytes.length;
      }
    }
  }
  return out;
}

/** A length-delimited protobuf field (wire type 2): tag, varint length, bytes; kept, as every caller keeps it. */
export function lengthDelimited(field: number, bytes: Uint8Array): Buffer {
  return encodeFields([{ field, bytes }], KEPT);
}

function tagOf(field: number): number {
  return (field << 3) | 2;
}

/** Bytes a varint of `value` (0 to 2³²−1) takes. */
function varintSize(value: number): number {
  let size = 1;
  for (let rest = value >>> 7; rest > 0; rest >>>= 7) size++;
  return size;
}

/** Writes `value` as a varint at `at`; returns where the next byte goes. */
function writeVarint(out: Uint8Array, at: number, value: number): number {
  let rest = value >>> 0;
  while (rest > 0x7f) {
    out[at++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  out[at++] = rest;
  return at;
}
