import { issueWorkloadCertificate, MtlsUnavailableError, type IssuedWorkloadCertificate } from '../identity/index.js';
import {
  certificateTtlOf,
  DataplaneNotFoundError,
  mtlsModeOf,
  parseNodeId,
  renewalDue,
  signingAuthority,
  spiffeIdsOf,
  type CertificateAuthority,
  type Dataplane,
  type GenerationInput,
  type Held,
  type MeshResources,
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
 *
 * Pregeneration issues them ahead too (`issueAhead`), so that a fleet connecting at once is not
 * held up by signing: a certificate issued ahead hangs on the stored Dataplane it was made for
 * (a rewrite or a delete drops it with it) until that node's session is created or asks, and is
 * handed over then if its CA still signs and its renewal is not yet due.
 */
export class CertificateKeeper {
  readonly #options: CertificateKeeperOptions;
  readonly #held = new Map<string, IssuedWorkloadCertificate>();
  readonly #ahead = new WeakMap<Held<Dataplane>, IssuedWorkloadCertificate>();

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

  /** The certificate issued ahead for the node's Dataplane as stored now, which its session has not taken yet. */
  ahead(node: string): NodeCertificate | undefined {
    const found = this.#find(node);
    return found.ok ? this.#ahead.get(found.dataplane) : undefined;
  }

  /** The soonest `notAfter` of the certificates held (epoch ms), for the expiry gauge; undefined when none. */
  soonestExpiry(): number | undefined {
    let soonest: number | undefined;
    for (const held of this.#held.values()) if (soonest === undefined || held.notAfter < soonest) soonest = held.notAfter;
    return soonest;
  }

  /**
   * Issues `node` a certificate from its mesh's signing CA, for its SPIFFE IDs now, valid for
   * the mesh's `certificateTTL`, or hands over the one issued ahead for it. Rejects with
   * `DataplaneNotFoundError` when the node's mesh or Dataplane is gone, and `MtlsUnavailableError`
   * while the mesh has no CA; the session shows why, and it is tried again.
   */
  async issue(node: string): Promise<CertificateInfo> {
    const found = this.#find(node);
    if (!found.ok) throw found.error;
    const { state, dataplane } = found;
    const authority = signingAuthority(state);
    if (authority === undefined) throw new MtlsUnavailableError(state.mesh.resource.name, 'its CA is being created; try again');
    const handed = this.#takeAhead(node, state, dataplane);
    if (handed !== undefined) return handed;
    const renewal = this.#held.has(node);
    const issued = sign(authority, state, dataplane, this.#options.now());
    this.#options.onIssued?.(renewal);
    return this.#hold(node, issued);
  }

  /**
   * Hands `node` the certificate issued ahead for its Dataplane as stored now, when its CA still
   * signs and its renewal is not yet due, without waiting: a session being created takes it
   * before its first generation (session-registry.ts). Undefined when there is none to hand over.
   */
  handOver(node: string): CertificateInfo | undefined {
    const found = this.#find(node);
    return found.ok ? this.#takeAhead(node, found.state, found.dataplane) : undefined;
  }

  #takeAhead(node: string, state: MeshResources, dataplane: Held<Dataplane>): CertificateInfo | undefined {
    const ahead = this.#ahead.get(dataplane);
    if (ahead === undefined) return undefined;
    this.#ahead.delete(dataplane);
    // A mesh whose mTLS was turned off since needs none: its session would only renew it, for nothing.
    if (mtlsModeOf(state.mesh.resource) === 'disabled') return undefined;
    const authority = signingAuthority(state);
    const usable = ahead.issuer === authority?.resource.name && renewalDue(ahead.notBefore, ahead.notAfter) > this.#options.now();
    return usable ? this.#hold(node, ahead) : undefined;
  }

  /**
   * Issues `node` its certificate before its session asks, when its mesh has mTLS and a signing
   * CA and the node holds none here and was issued none ahead for its Dataplane as stored now.
   * Does nothing otherwise, when the node is unknown, or when signing fails: its session, asking
   * in its turn, meets the same and says why.
   */
  issueAhead(node: string): void {
    const found = this.#find(node);
    if (!found.ok || this.#held.has(node) || this.#ahead.has(found.dataplane)) return;
    const { state, dataplane } = found;
    const authority = signingAuthority(state);
    if (authority === undefined || mtlsModeOf(state.mesh.resource) === 'disabled') return;
    let issued: IssuedWorkloadCertificate;
    try {
      issued = sign(authority, state, dataplane, this.#options.now());
    } catch {
      return;
    }
    this.#ahead.set(dataplane, issued);
    this.#options.onIssued?.(false);
  }

  /** Holds `issued` as the node's certificate, and says what its session shows of it. */
  #hold(node: string, issued: IssuedWorkloadCertificate): CertificateInfo {
    this.#held.set(node, issued);
    const { spiffeIds, serial, issuer, notBefore, notAfter } = issued;
    return { spiffeIds, serial, issuer, notAfter, renewAt: renewalDue(notBefore, notAfter) };
  }

  #find(node: string): { ok: true; state: MeshResources; dataplane: Held<Dataplane> } | { ok: false; error: DataplaneNotFoundError } {
    const id = parseNodeId(node);
    const projection = this.#options.projection();
    const state = id.ok ? projection.meshes.get(id.mesh) : undefined;
    const dataplane = id.ok ? state?.dataplanes.get(id.name) : undefined;
    if (id.ok && state !== undefined && dataplane !== undefined) return { ok: true, state, dataplane };
    return { ok: false, error: new DataplaneNotFoundError(node, projection.revision, id.ok ? id.mesh : '', id.ok ? id.name : node) };
  }

  forget(node: string): void {
    this.#held.delete(node);
  }
}

/** The node's certificate from `authority`, for its SPIFFE IDs, for its mesh's `certificateTTL` from `now`. */
function sign(authority: Held<CertificateAuthority>, state: MeshResources, dataplane: Held<Dataplane>, now: number): IssuedWorkloadCertificate {
  return issueWorkloadCertificate({ authority: authority.resource, spiffeIds: spiffeIdsOf(dataplane.resource), now, ttl: certificateTtlOf(state.mesh.resource) });
}
