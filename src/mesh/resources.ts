/**
 * Chancery's resource types (DESIGN.md section 6). A value of `Valid<T>` has passed
 * `validate()`; the store and the generator accept nothing else.
 */

import { POLICY_TYPES, type Policy } from '../policies/index.js';

declare const valid: unique symbol;
export type Valid<T> = T & { readonly [valid]: true };

/** Whether a mesh's dataplanes must prove who they are on the xDS stream (docs/security.md, "Securing Chancery"). */
export type DataplaneAuth = 'none' | 'token';
export const DATAPLANE_AUTH_MODES: readonly DataplaneAuth[] = ['none', 'token'];

export interface Mesh {
  readonly type: 'Mesh';
  readonly name: string;
  readonly dataplaneAuth: DataplaneAuth;
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

/**
 * A key pair Chancery signs a mesh's dataplane tokens with (RS256, PEM). The newest signs; every
 * key verifies until it is deleted, which revokes the tokens it signed. Named by its `kid`.
 */
export interface SigningKey {
  readonly type: 'SigningKey';
  readonly mesh: string;
  readonly name: string;
  /** SPKI PEM. */
  readonly publicKey: string;
  /** PKCS #8 PEM; never answered by the API. */
  readonly privateKey: string;
}

/**
 * The public half of a service account's key: a proxyless gRPC dataplane signs its own JWTs
 * with the private half (Google default credentials), and may speak only as `dataplane`.
 * Named by its `kid` (the account's `private_key_id`).
 */
export interface ServiceAccountKey {
  readonly type: 'ServiceAccountKey';
  readonly mesh: string;
  readonly name: string;
  readonly dataplane: string;
  /** SPKI PEM. */
  readonly publicKey: string;
}

export type ApiRole = 'admin' | 'writer' | 'reader';
export const API_ROLES: readonly ApiRole[] = ['admin', 'writer', 'reader'];

/**
 * A caller of the HTTP API: a name (the author of its writes), a role, for a writer the meshes
 * it may write, and the SHA-256 of its secret. Deleting it revokes it.
 */
export interface ApiToken {
  readonly type: 'ApiToken';
  readonly name: string;
  readonly role: ApiRole;
  /** The meshes a `writer` may write; empty for the other roles. */
  readonly meshes: readonly string[];
  /** Hex SHA-256 of the token's secret part; the secret itself is never stored. */
  readonly secretHash: string;
  /** ISO 8601. */
  readonly expiresAt: string;
}

/** What authentication reads and the generator never does. */
export type Credential = SigningKey | ServiceAccountKey | ApiToken;
/** What users write as manifests (`chancery apply`, `PUT`): meshes, dataplanes and traffic policies. */
export type Configuration = Mesh | Dataplane | Policy;
export type Resource = Configuration | Credential;
export type ResourceType = Resource['type'];
export type CredentialType = Credential['type'];
export type ConfigurationType = Configuration['type'];
export const CONFIGURATION_TYPES: readonly ConfigurationType[] = ['Mesh', 'Dataplane', ...POLICY_TYPES];
export const RESOURCE_TYPES: readonly ResourceType[] = [...CONFIGURATION_TYPES, 'SigningKey', 'ServiceAccountKey', 'ApiToken'];
export const CREDENTIAL_TYPES: readonly CredentialType[] = ['SigningKey', 'ServiceAccountKey', 'ApiToken'];

/** Types that live in a mesh: written only into a live mesh, and deleted with it. */
const MESH_SCOPED: ReadonlySet<ResourceType> = new Set(['Dataplane', ...POLICY_TYPES, 'SigningKey', 'ServiceAccountKey']);

export function isMeshScoped(type: ResourceType): boolean {
  return MESH_SCOPED.has(type);
}

export function isCredential(resource: Resource): resource is Credential {
  return (CREDENTIAL_TYPES as readonly string[]).includes(resource.type);
}

/** Identifies a resource. A global resource's (a Mesh's, an ApiToken's) `mesh` is its own name. */
export interface ResourceKey {
  readonly type: ResourceType;
  readonly mesh: string;
  readonly name: string;
}

export function keyOf(resource: Resource): ResourceKey {
  return 'mesh' in resource
    ? { type: resource.type, mesh: resource.mesh, name: resource.name }
    : { type: resource.type, mesh: resource.name, name: resource.name };
}

export const DEFAULT_MESH = 'default';
