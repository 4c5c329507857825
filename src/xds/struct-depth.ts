/**
 * How deeply an encoded google.protobuf.Struct nests, read from its bytes without decoding it
 * and without recursion: 1 for a Struct of scalars, one more for each `struct_value` or
 * `list_value` inside. It stops as soon as the depth passes `max` (answering `max + 1`), so a
 * node.metadata nested a million levels costs no more than one nested `max` (issue 11).
 * Undefined when the bytes are not a Struct's wire encoding.
 *
 * Struct { map<string, Value> fields = 1 }; a map entry { string key = 1; Value value = 2 };
 * Value { …; Struct struct_value = 5; ListValue list_value = 6 }; ListValue { repeated Value values = 1 }.
 */
export function structDepth(bytes: Uint8Array, max: number): number | undefined {
  const reader = new WireReader(bytes);
  const frames: Frame[] = [{ kind: 'struct', end: bytes.length, depth: 1 }];
  let deepest = 1;
  while (frames.length > 0) {
    const frame = frames[frames.length - 1]!;
    if (reader.pos === frame.end) {
      frames.pop();
      continue;
    }
    const tag = reader.varint();
    if (tag === undefined) return undefined;
    const field = tag >>> 3;
    const wireType = tag & 7;
    const inner = wireType === 2 ? CHILD[frame.kind][field] : undefined;
    if (inner === undefined) {
      if (!reader.skip(wireType, frame.end)) return undefined;
      continue;
    }
    const length = reader.varint();
    if (length === undefined || reader.pos + length > frame.end) return undefined;
    const depth = inner === 'struct' || inner === 'list' ? frame.depth + 1 : frame.depth;
    if (depth > max) return max + 1;
    deepest = Math.max(deepest, depth);
    frames.push({ kind: inner, end: reader.pos + length, depth });
  }
  return deepest;
}

type Kind = 'struct' | 'entry' | 'value' | 'list';

interface Frame {
  readonly kind: Kind;
  /** Where this message's bytes end. */
  readonly end: number;
  /** Structs and lists around it, itself included. */
  readonly depth: number;
}

/** The length-delimited fields of each message that hold another: field number → its kind. */
const CHILD: Readonly<Record<Kind, Readonly<Record<number, Kind>>>> = {
  struct: { 1: 'entry' },
  entry: { 2: 'value' },
  value: { 5: 'struct', 6: 'list' },
  list: { 1: 'value' },
};

/** Protobuf wire primitives over a byte array; each read answers undefined past the end. */
class WireReader {
  pos = 0;

  constructor(readonly bytes: Uint8Array) {}

  /** A varint of at most `bytes` bytes: 5 for tags and lengths (32 bits), 10 for a value. */
  varint(bytes = 5): number | undefined {
    let value = 0;
    for (let i = 0; i < bytes; i += 1) {
      const byte = this.bytes[this.pos++];
      if (byte === undefined) return undefined;
      value += (byte & 0x7f) * 2 ** (7 * i);
      if (byte < 0x80) return value;
    }
    return undefined;
  }

  /** Skips one field's value; false when it runs past `end` or is a group (never in a Struct). */
  skip(wireType: number, end: number): boolean {
    let length: number | undefined;
    if (wireType === 0) length = this.varint(10) === undefined ? undefined : 0;
    else if (wireType === 1) length = 8;
    else if (wireType === 2) length = this.varint();
    else if (wireType === 5) length = 4;
    if (length === undefined || this.pos + length > end) return false;
    this.pos += length;
    return true;
  }
}
