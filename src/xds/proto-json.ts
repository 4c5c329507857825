import protobuf from 'protobufjs';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const WRAPPERS = new Set(
  ['Double', 'Float', 'Int64', 'UInt64', 'Int32', 'UInt32', 'Bool', 'String', 'Bytes'].map((name) => `google.protobuf.${name}Value`),
);
const LONG_TYPES = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

/**
 * A decoded message as canonical proto3 JSON, with the field names of the .proto: what Envoy's
 * admin `/config_dump`, grpcurl and go-control-plane print. Durations are `"5s"`, wrappers
 * their bare value, 64-bit integers strings, `Any` its `@type` and fields, and fields without
 * presence that hold their default are left out, so what Chancery says it sent can be read
 * side by side with what Envoy says it holds.
 */
export function toProtoJson(type: protobuf.Type, message: protobuf.Message): { [key: string]: Json } {
  const json: { [key: string]: Json } = {};
  const fields = message as unknown as Record<string, unknown>;
  for (const field of type.fieldsArray) {
    if (!Object.hasOwn(fields, field.name)) continue;
    const value = fields[field.name];
    if (value === null || value === undefined) continue;
    if (field.map) {
      const entries = Object.entries(value as Record<string, unknown>);
      if (entries.length > 0) json[field.name] = Object.fromEntries(entries.map(([key, item]) => [key, valueOf(field, item)]));
    } else if (field.repeated) {
      const items = value as unknown[];
      if (items.length > 0) json[field.name] = items.map((item) => valueOf(field, item));
    } else if (hasPresence(field) || !isDefault(field, value)) {
      json[field.name] = valueOf(field, value);
    }
  }
  return json;
}

function valueOf(field: protobuf.Field, value: unknown): Json {
  const { resolvedType } = field;
  if (resolvedType instanceof protobuf.Enum) return resolvedType.valuesById[value as number] ?? (value as number);
  if (resolvedType instanceof protobuf.Type) return messageJson(resolvedType, value as protobuf.Message);
  return scalar(field.type, value);
}

function messageJson(type: protobuf.Type, message: protobuf.Message): Json {
  const fields = message as unknown as Record<string, unknown>;
  const name = type.fullName.slice(1);
  if (name === 'google.protobuf.Any') return anyJson(type, fields);
  if (name === 'google.protobuf.Duration') return durationJson(fields['seconds'], Number(fields['nanos'] ?? 0));
  if (name === 'google.protobuf.Timestamp') {
    const ms = Number(String(fields['seconds'] ?? 0)) * 1000 + Math.floor(Number(fields['nanos'] ?? 0) / 1e6);
    return new Date(ms).toISOString();
  }
  if (WRAPPERS.has(name)) return valueOf(type.fields['value']!, fields['value'] ?? defaultOf(type.fields['value']!));
  if (name === 'google.protobuf.Struct') {
    const entries = Object.entries((fields['fields'] ?? {}) as Record<string, protobuf.Message>);
    const valueType = type.fields['fields']!.resolvedType as protobuf.Type;
    return Object.fromEntries(entries.map(([key, item]) => [key, messageJson(valueType, item)]));
  }
  if (name === 'google.protobuf.Value') {
    // protobufjs's own copy of struct.proto names its fields in camelCase (nullValue, stringValue).
    const kind = type.oneofsArray[0]?.fieldsArray.find((field) => Object.hasOwn(fields, field.name));
    if (kind === undefined || kind.resolvedType instanceof protobuf.Enum) return null;
    return valueOf(kind, fields[kind.name]);
  }
  if (name === 'google.protobuf.ListValue') {
    const values = (fields['values'] ?? []) as protobuf.Message[];
    return values.map((item) => messageJson(type.fields['values']!.resolvedType as protobuf.Type, item));
  }
  return toProtoJson(type, message);
}

function anyJson(type: protobuf.Type, fields: Record<string, unknown>): Json {
  const typeUrl = String(fields['type_url'] ?? '');
  let inner: protobuf.Type;
  try {
    inner = type.root.lookupType(typeUrl.slice(typeUrl.lastIndexOf('/') + 1));
  } catch {
    // A type this build has no .proto for: shown as the bytes it is.
    return { '@type': typeUrl, value: Buffer.from((fields['value'] ?? new Uint8Array()) as Uint8Array).toString('base64') };
  }
  const decoded = messageJson(inner, inner.decode((fields['value'] ?? new Uint8Array()) as Uint8Array));
  // A well-known type inside an Any keeps its JSON form under `value` (proto3 JSON mapping).
  const isObject = typeof decoded === 'object' && decoded !== null && !Array.isArray(decoded);
  return isObject && !inner.fullName.startsWith('.google.protobuf.') ? { '@type': typeUrl, ...decoded } : { '@type': typeUrl, value: decoded };
}

function durationJson(seconds: unknown, nanos: number): string {
  const whole = String(seconds ?? 0);
  if (nanos === 0) return `${whole}s`;
  const digits = String(Math.abs(nanos)).padStart(9, '0');
  const fraction = digits.endsWith('000000') ? digits.slice(0, 3) : digits.endsWith('000') ? digits.slice(0, 6) : digits;
  const sign = nanos < 0 && !whole.startsWith('-') ? '-' : '';
  return `${sign}${whole}.${fraction}s`;
}

function scalar(type: string, value: unknown): Json {
  if (LONG_TYPES.has(type)) return String(value);
  if (type === 'bytes') return Buffer.from(value as Uint8Array).toString('base64');
  if ((type === 'double' || type === 'float') && !Number.isFinite(value as number)) return String(value);
  return value as Json;
}

/** Oneof members, messages and proto3 `optional` fields say whether they are set; other fields only have a value. */
function hasPresence(field: protobuf.Field): boolean {
  return field.partOf !== null || field.resolvedType instanceof protobuf.Type;
}

function isDefault(field: protobuf.Field, value: unknown): boolean {
  if (field.type === 'bytes') return (value as Uint8Array).length === 0;
  if (LONG_TYPES.has(field.type)) return String(value) === '0';
  return value === defaultOf(field);
}

function defaultOf(field: protobuf.Field): unknown {
  if (field.resolvedType instanceof protobuf.Enum) return 0;
  switch (field.type) {
    case 'string':
      return '';
    case 'bool':
      return false;
    default:
      return 0;
  }
}
