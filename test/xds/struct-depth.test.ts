import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lookupType } from '../../src/xds/protos.js';
import { structDepth } from '../../src/xds/struct-depth.js';
import { fuzz } from '../support/fuzz.js';
import { nestedStruct, wideStruct } from '../support/xds-wire.js';

const struct = lookupType('google.protobuf.Struct');

/** A Struct value of up to `depth` levels of Structs and lists, as protobufjs's `fromObject` takes it. */
function structValue(depth: number): fc.Arbitrary<Record<string, unknown>> {
  const { value } = fc.letrec<{ value: Record<string, unknown>; struct: Record<string, unknown> }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', maxDepth: depth },
      fc.record({ string_value: fc.string() }),
      fc.record({ number_value: fc.double({ noNaN: true }) }),
      fc.record({ bool_value: fc.boolean() }),
      fc.constant({ null_value: 'NULL_VALUE' }),
      fc.record({ struct_value: tie('struct') }),
      fc.record({ list_value: fc.record({ values: fc.array(tie('value'), { maxLength: 3 }) }) }),
    ),
    struct: fc.record({ fields: fc.dictionary(fc.string({ maxLength: 5 }), tie('value'), { maxKeys: 3 }) }),
  }));
  return fc.record({ fields: fc.dictionary(fc.string({ maxLength: 5 }), value, { maxKeys: 4 }) });
}

/** The depth of a decoded Struct, by recursion: only for the small ones generated here. */
function depthOf(message: Record<string, unknown>): number {
  const values = Object.values((message.fields ?? {}) as Record<string, Record<string, unknown>>);
  return 1 + Math.max(0, ...values.map(valueDepth));
}

function valueDepth(value: Record<string, unknown>): number {
  if (value.struct_value) return depthOf(value.struct_value as Record<string, unknown>);
  if (value.list_value) {
    const items = ((value.list_value as { values?: Record<string, unknown>[] }).values ?? []).map(valueDepth);
    return 1 + Math.max(0, ...items);
  }
  return 0;
}

describe('structDepth: how deep an encoded node.metadata nests, read without decoding it (issue 11)', () => {
  it('agrees with the depth of the Struct protobufjs decodes, for any Struct', async () => {
    await fuzz(
      fc.asyncProperty(structValue(6), async (value) => {
        const bytes = struct.encode(struct.fromObject(value)).finish();
        const expected = depthOf(struct.toObject(struct.decode(bytes)) as Record<string, unknown>);
        expect(structDepth(bytes, 100)).toBe(expected);
      }),
      { runs: 300 },
    );
  });

  it('stops one level past the limit, however deep the Struct goes', () => {
    expect(structDepth(nestedStruct(1), 16)).toBe(1);
    expect(structDepth(nestedStruct(16), 16)).toBe(16);
    expect(structDepth(nestedStruct(17), 16)).toBe(17);
    expect(structDepth(nestedStruct(5_000), 16)).toBe(17);
    expect(structDepth(wideStruct(100_000), 16)).toBe(1);
  });

  it('answers undefined for bytes that are not a Struct, never throwing', () => {
    for (const bytes of [[0x0a, 0x05, 0x01], [0x0b], [0xff, 0xff, 0xff, 0xff, 0xff, 0xff], [0x0a, 0x80]]) {
      expect(structDepth(Uint8Array.from(bytes), 16)).toBeUndefined();
    }
  });
});
