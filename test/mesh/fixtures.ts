import { validate } from '../../src/mesh/validate.js';
import type { Dataplane, Mesh, Resource, Valid } from '../../src/mesh/resources.js';
import {
  asResourceVersion,
  asSeq,
  type MeshState,
  type Projection,
  type Stored,
} from '../../src/store/types.js';
import type { EncodedResource } from '../../src/xds/encode.js';
import { lookupType } from '../../src/xds/protos.js';
import { messageName } from '../../src/xds/type-urls.js';

/** Validates or fails the test: fixtures are written to be valid. */
export function valid(input: unknown): Valid<Resource> {
  const result = validate(input);
  if (!result.ok) throw new Error(`fixture is invalid: ${JSON.stringify(result.issues)}`);
  return result.resource;
}

export function stored<T extends Resource>(resource: Valid<T>, seq = 1): Stored<T> {
  return { resource, version: asResourceVersion(1), seq: asSeq(seq), updatedAt: '2025-01-01T00:00:00.000Z' };
}

export function storedMesh(name = 'default'): Stored<Mesh> {
  return stored(valid({ type: 'Mesh', name }) as Valid<Mesh>);
}

export interface DataplaneSpec {
  readonly name: string;
  readonly mesh?: string;
  readonly address?: string;
  readonly inbound?: readonly { port: number; servicePort?: number; tags: Record<string, string> }[];
  readonly outbound?: readonly { port: number; service: string }[];
}

export function storedDataplane(spec: DataplaneSpec, seq = 1): Stored<Dataplane> {
  const resource = valid({
    type: 'Dataplane',
    mesh: spec.mesh ?? 'default',
    name: spec.name,
    networking: { address: spec.address ?? '10.0.0.1', inbound: spec.inbound, outbound: spec.outbound },
  });
  return stored(resource as Valid<Dataplane>, seq);
}

export function meshState(mesh: Stored<Mesh>, dataplanes: readonly Stored<Dataplane>[]): MeshState {
  return { mesh, dataplanes: new Map(dataplanes.map((dataplane) => [dataplane.resource.name, dataplane])), authorities: new Map(), tls: new Map() };
}

/** A mesh state with one dataplane replaced or added, as the projection makes on a write. */
export function withDataplane(state: MeshState, dataplane: Stored<Dataplane>): MeshState {
  return { ...state, dataplanes: new Map([...state.dataplanes, [dataplane.resource.name, dataplane]]) };
}

export function projection(revision: number, ...states: readonly MeshState[]): Projection {
  return { revision: asSeq(revision), meshes: new Map(states.map((state) => [state.mesh.resource.name, state])), credentials: new Map() };
}

/** Decoded JSON of a message, embedded `Any`s as `{ '@type': url, ...fields }`. */
export type Decoded = { readonly [field: string]: unknown };

/**
 * Decodes an encoded resource the way a client does: the `Any` (field 1 `type_url`, field 2
 * `value`), then the message its type URL names.
 */
export function decode(resource: EncodedResource): { typeUrl: string; message: Decoded } {
  const any = lookupType('google.protobuf.Any').decode(resource.any) as unknown as { type_url: string; value: Uint8Array };
  const type = lookupType(messageName(any.type_url));
  const message = type.toObject(type.decode(any.value), { json: true, enums: String, longs: Number }) as Decoded;
  return { typeUrl: any.type_url, message };
}
