import protobuf from 'protobufjs';

/**
 * DiscoveryRequests written field by field, for what protobufjs will not encode: its encoder
 * and `fromObject` stop at 100 nested messages, and a hostile client's metadata goes deeper.
 * Field numbers are Envoy's (envoy/service/discovery/v3/discovery.proto, google/protobuf/struct.proto).
 */

/** A length-delimited field: its tag, its length, its bytes. */
function field(number: number, bytes: Uint8Array | string): Uint8Array {
  const writer = protobuf.Writer.create().uint32((number << 3) | 2);
  return (typeof bytes === 'string' ? writer.string(bytes) : writer.bytes(bytes)).finish();
}

function concat(...parts: readonly Uint8Array[]): Uint8Array {
  return Buffer.concat(parts);
}

/** A Struct `{ a: { a: { … } } }` nested `depth` levels, built inside out without recursion. */
export function nestedStruct(depth: number): Uint8Array {
  let struct: Uint8Array = new Uint8Array();
  for (let level = 1; level < depth; level += 1) {
    // Struct.fields entry { key = 1: "a", value = 2: Value { struct_value = 5: the inner Struct } }
    struct = field(1, concat(field(1, 'a'), field(2, field(5, struct))));
  }
  return struct;
}

/** A flat Struct of about `bytes` bytes: one string value. */
export function wideStruct(bytes: number): Uint8Array {
  // Value.string_value = 3
  return field(1, concat(field(1, 'padding'), field(2, field(3, 'x'.repeat(bytes)))));
}

/** A Struct `{ a: [[[ … ]]] }`: lists nested `depth` levels inside one field, built inside out without recursion. */
export function nestedList(depth: number): Uint8Array {
  // An empty Value; each level is a Value { list_value = 6: ListValue { values = 1: the inner Value } }.
  let value: Uint8Array = new Uint8Array();
  for (let level = 1; level < depth; level += 1) value = field(6, field(1, value));
  return field(1, concat(field(1, 'a'), field(2, value)));
}

/** A Struct of `count` string fields, `<key><i>: <value>`: wide in keys rather than in bytes. */
export function manyFields(count: number, key: string, value: string): Uint8Array {
  const entry = (i: number) => field(1, concat(field(1, `${key}${i}`), field(2, field(3, value))));
  return concat(...Array.from({ length: count }, (_, i) => entry(i)));
}

export interface WireRequestSpec {
  readonly typeUrl: string;
  readonly nodeId?: string;
  readonly metadata?: Uint8Array;
  readonly resourceNames?: readonly string[];
}

/** A DiscoveryRequest: version_info = 1, node = 2 { id = 1, metadata = 3 }, resource_names = 3, type_url = 4. */
export function discoveryRequestBytes(spec: WireRequestSpec): Uint8Array {
  const node =
    spec.nodeId === undefined && spec.metadata === undefined
      ? []
      : [field(2, concat(...(spec.nodeId === undefined ? [] : [field(1, spec.nodeId)]), ...(spec.metadata ? [field(3, spec.metadata)] : [])))];
  return concat(...node, ...(spec.resourceNames ?? []).map((name) => field(3, name)), field(4, spec.typeUrl));
}

/** A DeltaDiscoveryRequest: node = 1 { id = 1, metadata = 3 }, type_url = 2, resource_names_subscribe = 3. */
export function deltaDiscoveryRequestBytes(spec: WireRequestSpec): Uint8Array {
  const node =
    spec.nodeId === undefined && spec.metadata === undefined
      ? []
      : [field(1, concat(...(spec.nodeId === undefined ? [] : [field(1, spec.nodeId)]), ...(spec.metadata ? [field(3, spec.metadata)] : [])))];
  return concat(...node, field(2, spec.typeUrl), ...(spec.resourceNames ?? []).map((name) => field(3, name)));
}
