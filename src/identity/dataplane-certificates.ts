import {
  certificateTtlOf,
  mtlsModeOf,
  renewalDue,
  sameTlsFacts,
  signingAuthority,
  spiffeIdsOf,
  trustBundleOf,
  unreportedInbound,
  type DataplaneTls,
  type MeshResources,
  type Valid,
} from '../mesh/index.js';
import type { CredentialStore } from './credential-store.js';
import { NotFoundError } from '../store/index.js';
import { MtlsUnavailableError } from './errors.js';
import { signCertificateRequest, type WorkloadCertificate } from './workload-certificates.js';

/** What `POST /meshes/{mesh}/dataplanes/{name}/certificate` answers: the certificate and what to trust, never a key. */
export interface SignedDataplaneCertificate extends WorkloadCertificate {
  /** PEM: every CA of the mesh. */
  readonly trustBundle: string;
  /** Epoch ms: when to ask again (2/3 of its life). */
  readonly renewAt: number;
}

/**
 * Signs the CSR of Dataplane `name` of the mesh (`chancery agent`, for proxyless gRPC): with
 * the mesh's signing CA, for the SPIFFE IDs the Dataplane may have, for the mesh's
 * `certificateTTL`. Rejects with `NotFoundError` for a missing Dataplane, `MtlsUnavailableError`
 * when the mesh has mTLS disabled or no CA yet, `InvalidCertificateRequestError` for a bad CSR.
 */
export async function signDataplaneCertificate(state: MeshResources, name: string, csr: string, now: number): Promise<SignedDataplaneCertificate> {
  const mesh = state.mesh.resource;
  const dataplane = state.dataplanes.get(name);
  if (dataplane === undefined) throw new NotFoundError({ type: 'Dataplane', mesh: mesh.name, name });
  if (mtlsModeOf(mesh) === 'disabled') throw new MtlsUnavailableError(mesh.name, 'its mtls.mode is disabled');
  const authority = signingAuthority(state);
  if (authority === undefined) throw new MtlsUnavailableError(mesh.name, 'its CA is being created; try again');
  const signed = await signCertificateRequest(csr, { authority: authority.resource, spiffeIds: spiffeIdsOf(dataplane.resource), now, ttl: certificateTtlOf(mesh) });
  return { ...signed, trustBundle: trustBundleOf(state), renewAt: renewalDue(signed.notBefore, signed.notAfter) };
}

/**
 * Records in the node's DataplaneTls status the CA of the certificate its agent now holds and
 * the CAs of the bundle it was given, keeping what its inbound accepts (its xDS session writes
 * that; until it has, what `unreportedInbound` says): a gRPC client's files are where it verifies
 * peers, so a rotated-in CA signs only once agents have the bundle holding it, and a CA is not
 * removed while an agent holds what it signed.
 */
export async function recordAgentCertificate(store: CredentialStore, state: MeshResources, name: string, signed: SignedDataplaneCertificate): Promise<void> {
  const mesh = state.mesh.resource.name;
  const stored = state.tls.get(name)?.resource;
  const held = { issuer: signed.issuer, trusts: [...state.authorities.keys()].sort(), inbound: stored?.inbound ?? unreportedInbound(mtlsModeOf(state.mesh.resource)) } as const;
  if (sameTlsFacts(stored, held)) return;
  const status: DataplaneTls = { type: 'DataplaneTls', mesh, name, ...held };
  await store.put(Object.freeze(status) as Valid<DataplaneTls>, { caller: 'chancery' });
}
