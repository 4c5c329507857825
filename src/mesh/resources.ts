/**
 * Chancery's resource types (DESIGN.md section 6). A value of `Valid<T>` has passed
 * `validate()`; the store and the generator accept nothing else.
 */

declare const valid: unique symbol;
export type Valid<T> = T & { readonly [valid]: true };

export interface Mesh {
  readonly type: 'Mesh';
  readonly name: string;
}

export interface Inbound {
  /** Listener port; for a proxyless gRPC server, the application's own port. */
  readonly port: number;
  /** Local application port behind an Envoy inbound; defaults to `port`. */
  readonly servicePort: number;
  readonly tags: Readonly<Record<string, string>> & { readonly service: string };
}

export interface Outbound {
  readonly port: number;
  readonly service: string;
}

export interface Dataplane {
  readonly type: 'Dataplane';
  readonly mesh: string;
  readonly name: string;
  readonly networking: {
    readonly address: string;
    readonly inbound: readonly Inbound[];
    readonly outbound: readonly Outbound[];
  };
}

export type Resource = Mesh | Dataplane;
export type ResourceType = Resource['type'];
export const RESOURCE_TYPES: readonly ResourceType[] = ['Mesh', 'Dataplane'];

/** Identifies a resource. A Mesh's `mesh` is its own name. */
export interface ResourceKey {
  readonly type: ResourceType;
  readonly mesh: string;
  readonly name: string;
}

export function keyOf(resource: Resource): ResourceKey {
  return resource.type === 'Mesh'
    ? { type: 'Mesh', mesh: resource.name, name: resource.name }
    : { type: 'Dataplane', mesh: resource.mesh, name: resource.name };
}

export const DEFAULT_MESH = 'default';
