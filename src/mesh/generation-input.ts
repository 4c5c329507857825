import type { CertificateAuthority, Dataplane, DataplaneTls, Mesh, Resource, Valid } from './resources.js';

/**
 * What the generator reads of a store revision. The store's projection is one (src/store adds
 * versions and sequence numbers); the generator memoises on these objects' identity, so a
 * resource left as it was costs no encoding.
 */
export interface GenerationInput {
  readonly revision: number;
  readonly meshes: ReadonlyMap<string, MeshResources>;
}

/** One mesh at a revision: a new object whenever anything in the mesh changes, the same object otherwise. */
export interface MeshResources {
  readonly mesh: Held<Mesh>;
  readonly dataplanes: ReadonlyMap<string, Held<Dataplane>>;
  /** The mesh's CAs by id: its trust bundle, and which of them signs. */
  readonly authorities: ReadonlyMap<string, Held<CertificateAuthority>>;
  /** What each dataplane has ACKed of mTLS, by dataplane name (src/mesh/tls-readiness.ts). */
  readonly tls: ReadonlyMap<string, Held<DataplaneTls>>;
}

/** A resource as stored: a new object only when it is written. */
export interface Held<T extends Resource> {
  readonly resource: Valid<T>;
}
