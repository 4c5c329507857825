import type { Policy } from '../policies/index.js';
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
  /**
   * The mesh's traffic policies by `policyId` (`MeshTimeout/timeout-global`): the same object
   * while no policy changes, so what is derived from them is derived once. Left out, none.
   */
  readonly policies?: ReadonlyMap<string, Held<Policy>>;
}

/** A policy's key among its mesh's policies: its type and name. */
export function policyId(type: Policy['type'], name: string): string {
  return `${type}/${name}`;
}

/** A resource as stored: a new object only when it is written. */
export interface Held<T extends Resource> {
  readonly resource: Valid<T>;
}
