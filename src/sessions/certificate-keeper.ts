import { issueWorkloadCertificate, MtlsUnavailableError, type IssuedWorkloadCertificate } from '../identity/index.js';
import {
  certificateTtlOf,
  DataplaneNotFoundError,
  parseNodeId,
  renewalDue,
  signingAuthority,
  spiffeIdsOf,
  type GenerationInput,
  type NodeCertificate,
} from '../mesh/index.js';
import type { CertificateInfo } from '../machines/index.js';

export interface CertificateKeeperOptions {
  /** The store's projection now: which CA signs, for which SPIFFE IDs, for how long. */
  readonly projection: () => GenerationInput;
  /** Epoch ms. */
  readonly now: () => number;
  /** Told of each certificate issued; `renewal` when it replaced one the node had. */
  readonly onIssued?: (renewal: boolean) => void;
}

/**
 * The workload certificates of this instance's nodes (docs/mtls.md): issued at the edge when a
 * session asks (the generator only reads them: a key is random, so it is an input), kept while
 * the node's session lives, and forgotten with it (I3). A key never leaves the instance but in
 * the node's own SDS Secret.
 */
export class CertificateKeeper {
  readonly #options: CertificateKeeperOptions;
  readonly #held = new Map<string, IssuedWorkloadCertificate>();

  constructor(options: CertificateKeeperOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#held.size;
  }

  /** The node's certificate while it is valid: an expired one is never served again (kuma#12409). */
  current(node: string): NodeCertificate | undefined {
    const held = this.#held.get(node);
    return held !== undefined && held.notAfter > this.#options.now() ? held : undefined;
  }

  /** The soonest `notAfter` of the certificates held (epoch ms), for the expiry gauge; undefined when none. */
  soonestExpiry(): number | undefined {
    let soonest: number | undefined;
    for (const held of this.#held.values()) if (soonest === undefined || held.notAfter < soonest) soonest = held.notAfter;
    return soonest;
  }

  /**
   * Issues `node` a certificate from its mesh's signing CA, for its SPIFFE IDs now, valid for
   * the mesh's `certificateTTL`. Rejects with `DataplaneNotFoundError` when the node's mesh or
   * Dataplane is gone, and `MtlsUnavailableError` while the mesh has no CA; the session shows
   * why, and it is tried again.
   */
  async issue(node: string): Promise<CertificateInfo> {
    const id = parseNodeId(node);
    const projection = this.#options.projection();
    const state = id.ok ? projection.meshes.get(id.mesh) : undefined;
    const dataplane = id.ok ? state?.dataplanes.get(id.name) : undefined;
    if (!id.ok || state === undefined || dataplane === undefined) throw new DataplaneNotFoundError(node, projection.revision, id.ok ? id.mesh : '', id.ok ? id.name : node);
    const authority = signingAuthority(state);
    if (authority === undefined) throw new MtlsUnavailableError(state.mesh.resource.name, 'its CA is being created; try again');
    const now = this.#options.now();
    const issued = issueWorkloadCertificate({
      authority: authority.resource,
      spiffeIds: spiffeIdsOf(dataplane.resource),
      now,
      ttl: certificateTtlOf(state.mesh.resource),
    });
    const renewal = this.#held.has(node);
    this.#held.set(node, issued);
    this.#options.onIssued?.(renewal);
    const { spiffeIds, serial, issuer, notBefore, notAfter } = issued;
    return { spiffeIds, serial, issuer, notAfter, renewAt: renewalDue(notBefore, notAfter) };
  }

  forget(node: string): void {
    this.#held.delete(node);
  }
}
