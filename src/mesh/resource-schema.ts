import path from 'node:path';
import protobuf from 'protobufjs';
import type { Resource, Valid } from './resources.js';

// Chancery's own protos live at the top of the package (proto/), beside src/ and dist/.
const PROTO_DIR = path.resolve(import.meta.dirname, '../../proto');

let root: protobuf.Root | undefined;

/** The chancery.v1 messages, loaded once from proto/. */
function schema(): protobuf.Root {
  root ??= protobuf.loadSync(['chancery/v1/resources.proto', 'chancery/v1/sessions.proto'].map((file) => path.join(PROTO_DIR, file)));
  return root;
}

/** The message type of a resource type (`chancery.v1.Dataplane`). */
export function resourceMessageType(type: Resource['type']): protobuf.Type {
  return schema().lookupType(`chancery.v1.${type}`);
}

/** A chancery.v1 message type by name (`SessionView`), for tools and tests. */
export function chanceryMessageType(name: string): protobuf.Type {
  return schema().lookupType(`chancery.v1.${name}`);
}

const JSON_MAPPING: protobuf.IConversionOptions = { arrays: true, objects: true, longs: Number, enums: String };

/**
 * A resource in the proto3 JSON mapping of its chancery.v1 message, `version` included when
 * given: what the HTTP API answers and the event log keeps as an event's body. Every field goes
 * through the schema, so the JSON has exactly the fields the .proto declares.
 */
export function resourceJson(resource: Valid<Resource>, version?: number): Record<string, unknown> {
  const type = resourceMessageType(resource.type);
  const message = type.fromObject(version === undefined ? resource : { ...resource, version });
  return type.toObject(message, JSON_MAPPING);
}

/** A resource as its chancery.v1 message on the wire (protobuf binary), for clients in other languages. */
export function encodeResourceMessage(resource: Valid<Resource>): Uint8Array {
  const type = resourceMessageType(resource.type);
  return type.encode(type.fromObject(resource)).finish();
}

/** Reads a chancery.v1 resource message into the JSON mapping, to be validated like any input. */
export function decodeResourceMessage(type: Resource['type'], bytes: Uint8Array): Record<string, unknown> {
  const messageType = resourceMessageType(type);
  return messageType.toObject(messageType.decode(bytes), JSON_MAPPING);
}
