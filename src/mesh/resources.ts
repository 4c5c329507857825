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

/**
 * Mutual TLS between a mesh's dataplanes (DESIGN §6 "Mesh mTLS"): `disabled` serves plaintext,
 * `permissive` lets inbounds take plaintext and mTLS, `strict` only mTLS.
 */
export type MtlsMode = 'disabled' | 'permissive' | 'strict';
export const MTLS_MODES: readonly MtlsMode[] = ['disabled', 'permissive', 'strict'];

export interface MeshMtls {
  readonly mode: MtlsMode;
  /** How long a dataplane's certificate is valid, as written (`24h`, `30s`); renewed at 2/3 of it. */
  readonly certificateTTL: string;
}

export interface Mesh {
  readonly type: 'Mesh';
  readonly name: string;
  readonly dataplaneAuth: DataplaneAuth;
  /** Absent: `disabled`. */
  readonly mtls?: MeshMtls;
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

/**
 * A mesh's certificate authority (ECDSA P-256, self-signed, long-lived): it signs the mesh's
 * workload certificates, and every CA of a mesh is in its trust bundle until removed. Created
 * when mTLS is enabled and by rotation; named by an id (`ca-1`, `ca-2`, … in creation order).
 */
export interface CertificateAuthority {
  readonly type: 'CertificateAuthority';
  readonly mesh: string;
  readonly name: string;
  /** PEM. */
  readonly certificate: string;
  /** PKCS #8 PEM; never answered by the API nor shown in `/events`. */
  readonly privateKey: string;
}

/** What a dataplane's inbound, as it ACKed it, accepts. */
export type InboundTls = 'plaintext' | 'permissive' | 'strict';
export const INBOUND_TLS: readonly InboundTls[] = ['plaintext', 'permissive', 'strict'];

/**
 * What a dataplane has ACKed of its mesh's mTLS, written by the instance serving it (never by a
 * user) when that changes: the generator reads it, so every instance derives the same
 * configuration from the same revision (I6) while a migration waits on what nodes actually hold
 * (I8): a client gets TLS to a service once every endpoint's inbound accepts it, and a CA signs
 * once every dataplane trusts it. Named after its Dataplane.
 */
export interface DataplaneTls {
  readonly type: 'DataplaneTls';
  readonly mesh: string;
  readonly name: string;
  /** The id of the CA that signed the certificate the node holds; '' for none. */
  readonly issuer: string;
  /** The ids of the CAs in the trust bundle the node holds, sorted. */
  readonly trusts: readonly string[];
  readonly inbound: InboundTls;
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

/** Secrets and what authentication reads. The generator reads only a mesh's CAs, through its mesh state. */
export type Credential = SigningKey | ServiceAccountKey | ApiToken | CertificateAuthority;
/** What users write as manifests (`chancery apply`, `PUT`): meshes, dataplanes and traffic policies. */
export type Configuration = Mesh | Dataplane | Policy;
/** What Chancery writes about its dataplanes, for the generator to read. */
export type Status = DataplaneTls;
export type Resource = Configuration | Credential | Status;
export type ResourceType = Resource['type'];
export type CredentialType = Credential['type'];
export type ConfigurationType = Configuration['type'];
export const CONFIGURATION_TYPES: readonly ConfigurationType[] = ['Mesh', 'Dataplane', ...POLICY_TYPES];
export const RESOURCE_TYPES: readonly ResourceType[] = [...CONFIGURATION_TYPES, 'SigningKey', 'ServiceAccountKey', 'ApiToken', 'CertificateAuthority', 'DataplaneTls'];
export const CREDENTIAL_TYPES: readonly CredentialType[] = ['SigningKey', 'ServiceAccountKey', 'ApiToken', 'CertificateAuthority'];

/** Types that live in a mesh: written only into a live mesh, and deleted with it. */
const MESH_SCOPED: ReadonlySet<ResourceType> = new Set(['Dataplane', ...POLICY_TYPES, 'SigningKey', 'ServiceAccountKey', 'CertificateAuthority', 'DataplaneTls']);

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
