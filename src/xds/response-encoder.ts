import { encodeFields, KEPT, lengthDelimited, type EncodedResource, type FieldPart } from './encode.js';
import { sameContent } from './resource-set.js';
import type { DeltaResponse, SotwResponse, XdsResponse } from './stream/index.js';

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

/** The last SotW body of a type: its fields but the nonce and the control plane, once a second response repeats it. */
interface SotwBody {
  readonly resources: readonly EncodedResource[];
  readonly version: string;
  bytes: Buffer | undefined;
  /** The last whole response made from it, and its nonce: the next with that nonce is the same bytes. */
  last: { readonly nonce: string; readonly bytes: Buffer } | undefined;
}

/**
 * Encodes DiscoveryResponses and DeltaDiscoveryResponses by hand around the resources' shared
 * `Any` bytes (I6: encode once); a Delta `Resource` (name, version, the resource) is cached per
 * resource. A response is one allocation (`encodeFields`). A SotW response that repeats the
 * previous one of its type but for the nonce (a change fanned out: 10,000 nodes sent the same
 * ClusterLoadAssignments, one after another) is the body encoded once, copied, and the nonce.
 * Nothing per node is kept: a node's own listeners and clusters are sent rarely, and a cached
 * copy would live as long as the session; one body per type is kept, not one per set of resources.
 */
export class ResponseEncoder {
  readonly #controlPlane: Buffer;
  readonly #deltaControlPlane: Buffer;
  readonly #typeUrls = new Map<string, Buffer>();
  readonly #deltaResources = new WeakMap<EncodedResource, Buffer>();
  readonly #sotwBodies = new Map<string, SotwBody>();

  /** `identifier` goes into `control_plane.identifier`, naming the instance that answered. */
  constructor(identifier: string) {
    const controlPlane = encodeFields([{ field: 1, text: identifier }]);
    this.#controlPlane = lengthDelimited(CONTROL_PLANE, controlPlane);
    this.#deltaControlPlane = lengthDelimited(DELTA_CONTROL_PLANE, controlPlane);
  }

  /** The response's bytes: grpc-js copies them into its frame, so bytes handed out before may be handed out again. */
  encode(response: XdsResponse): Buffer {
    return response.protocol === 'sotw' ? this.#sotw(response) : encodeFields(this.#delta(response));
  }

  /**
   * A stream's nonces count its responses, so the nodes a change reaches at the same point of their
   * streams are sent the same bytes: the previous response is handed out again when only its
   * nonce could have differed and did not.
   */
  #sotw(response: SotwResponse): Buffer {
    const nonce = { field: NONCE, text: response.nonce };
    const body = this.#sotwBody(response);
    if (body === undefined) return encodeFields([...this.#sotwFields(response), nonce, this.#controlPlane]);
    if (body.last?.nonce === response.nonce) return body.last.bytes;
    body.bytes ??= encodeFields(this.#sotwFields(response), KEPT);
    const bytes = encodeFields([body.bytes, nonce, this.#controlPlane]);
    body.last = { nonce: response.nonce, bytes };
    return bytes;
  }

  /** The fields before the nonce, in field order: version, resources, type URL. */
  #sotwFields({ version, resources, typeUrl }: SotwResponse): FieldPart[] {
    return [
      { field: VERSION_INFO, text: version },
      ...resources.map((resource) => ({ field: RESOURCES, bytes: resource.any })),
      this.#typeUrl(TYPE_URL, typeUrl),
    ];
  }

  /**
   * The body of `response` encoded, when the type's previous response had the same resources and
   * version: the same resources (a resource's version is the hash of its bytes), in one list or in
   * equal ones (an EDS response after an ACK is the changed resources, a list of its own at every node).
   */
  #sotwBody(response: SotwResponse): SotwBody | undefined {
    const { typeUrl, resources, version } = response;
    const last = this.#sotwBodies.get(typeUrl);
    if (last === undefined || last.version !== version || !sameContent(last.resources, resources)) {
      this.#sotwBodies.set(typeUrl, { resources, version, bytes: undefined, last: undefined });
      return undefined;
    }
    return last;
  }

  #delta(response: DeltaResponse): FieldPart[] {
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
      const wrapper = encodeFields([
        { field: RESOURCE_VERSION, text: resource.version },
        { field: RESOURCE_RESOURCE, bytes: resource.any },
        { field: RESOURCE_NAME, text: resource.name },
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
      encoded = encodeFields([{ field, text: typeUrl }], KEPT);
      this.#typeUrls.set(key, encoded);
    }
    return encoded;
  }
}
