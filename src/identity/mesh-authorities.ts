import {
  authoritiesOf,
  authorityId,
  authorityOrdinal,
  mtlsModeOf,
  notYetTrusting,
  signingAuthority,
  spiffeTrustDomain,
  trustBundleOf,
  type CertificateAuthority,
  type MeshResources,
  type Valid,
} from '../mesh/index.js';
import { VersionConflictError, type Stored, type WriteOptions } from '../store/index.js';
import type { CredentialStore } from './credential-store.js';
import { AuthorityInUseError } from './errors.js';
import { CLOCK_SKEW_MS } from './workload-certificates.js';
import { EC_P256, newEcKeyPair, privateKeyPem, randomSerial, x509 } from './x509.js';

/** A mesh CA is valid this long: rotated long before (istio#14516: a 1-year root took a mesh down). */
export const AUTHORITY_LIFETIME_MS = 10 * 365 * 86_400_000;

/** Makes the key and self-signed certificate of a mesh's CA `id`: CN and URI SAN name the mesh (Kuma's builtin CA). */
export async function newMeshAuthority(mesh: string, id: string, now: number): Promise<CertificateAuthority> {
  const keys = await newEcKeyPair();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: [{ CN: [`Chancery mesh ${mesh} ${id}`] }, { O: ['chancery'] }],
    notBefore: new Date(now - CLOCK_SKEW_MS),
    notAfter: new Date(now + AUTHORITY_LIFETIME_MS),
    keys,
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      new x509.SubjectAlternativeNameExtension([{ type: 'url', value: spiffeTrustDomain(mesh) }]),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { type: 'CertificateAuthority', mesh, name: id, certificate: certificate.toString('pem'), privateKey: await privateKeyPem(keys.privateKey) };
}

/**
 * Adds a CA to `mesh` (`chancery ca rotate`, `POST /meshes/{mesh}/ca`): it joins the trust bundle
 * at once and signs once every dataplane has ACKed that bundle (mesh-tls.ts `signingAuthority`).
 * Rejects with `MeshNotFoundError` for a missing mesh, and with `VersionConflictError` when
 * another rotation took the same id first (try again).
 */
export async function rotateMeshAuthority(
  store: CredentialStore,
  mesh: string,
  now: number,
  options: Pick<WriteOptions, 'caller'> = {},
): Promise<Stored<CertificateAuthority>> {
  let next = 1;
  for (const stored of store.list('CertificateAuthority', mesh)) next = Math.max(next, authorityOrdinal(stored.resource.name) + 1);
  const authority = await newMeshAuthority(mesh, authorityId(next), now);
  return (await store.put(Object.freeze(authority) as Valid<CertificateAuthority>, { ...options, expected: 'absent' })) as Stored<CertificateAuthority>;
}

/**
 * Gives a mesh with mTLS on its first CA when it has none; does nothing otherwise. Every
 * instance may call it at once: they all write `ca-1` only if absent, and the losers' conflicts
 * are the winner's success.
 */
export async function ensureMeshAuthority(store: CredentialStore, state: MeshResources, now: number): Promise<void> {
  if (mtlsModeOf(state.mesh.resource) === 'disabled' || state.authorities.size > 0) return;
  const mesh = state.mesh.resource.name;
  const authority = await newMeshAuthority(mesh, authorityId(1), now);
  try {
    await store.put(Object.freeze(authority) as Valid<CertificateAuthority>, { expected: 'absent', caller: 'chancery' });
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
  }
}

/** One CA as `GET /meshes/{mesh}/ca` lists it: never its key. */
export interface AuthorityView {
  readonly id: string;
  /** ISO 8601: when it was stored. */
  readonly createdAt: string;
  readonly notAfter: string;
  /** Whether it signs the mesh's certificates now. */
  readonly signing: boolean;
  /** How many connected dataplanes hold a certificate it signed. */
  readonly certificates: number;
  /** The dataplanes whose trust bundle does not hold it yet (it signs once none is left). */
  readonly awaiting: readonly string[];
  readonly certificate: string;
}

export interface AuthoritiesView {
  readonly mesh: string;
  readonly items: readonly AuthorityView[];
  /** PEM: every CA of the mesh, oldest first, as each dataplane trusts them. */
  readonly trustBundle: string;
}

/** A mesh's CAs for the API, with how many certificates of `connected` dataplanes each signed. */
export function meshAuthoritiesView(state: MeshResources & { readonly authorities: ReadonlyMap<string, Stored<CertificateAuthority>> }, connected: ReadonlySet<string>): AuthoritiesView {
  const signing = signingAuthority(state);
  const holders = holdersByAuthority(state, connected);
  const authorities = authoritiesOf(state) as readonly Stored<CertificateAuthority>[];
  return {
    mesh: state.mesh.resource.name,
    items: authorities.map((stored) => {
      const { name, certificate } = stored.resource;
      return {
        id: name,
        createdAt: stored.updatedAt,
        notAfter: notAfterOf(stored.resource).toISOString(),
        signing: stored === signing,
        certificates: holders.get(name)?.length ?? 0,
        awaiting: notYetTrusting(state, name),
        certificate,
      };
    }),
    trustBundle: trustBundleOf(state),
  };
}

/**
 * Removes CA `id` of a mesh (`chancery ca remove`). Refused with `AuthorityInUseError` while it
 * signs, or while a connected dataplane (on any instance: `connected` holds the node names)
 * holds a certificate it signed: removing it from the bundle would make that certificate
 * untrusted by its peers (envoyproxy/gateway#4891).
 */
export async function removeMeshAuthority(
  store: CredentialStore,
  state: MeshResources,
  id: string,
  connected: ReadonlySet<string>,
  options: Pick<WriteOptions, 'caller'> = {},
): Promise<void> {
  const mesh = state.mesh.resource.name;
  if (state.authorities.has(id)) {
    if (signingAuthority(state)?.resource.name === id && mtlsModeOf(state.mesh.resource) !== 'disabled') {
      throw new AuthorityInUseError(mesh, id, 'it signs the mesh’s certificates: rotate (chancery ca rotate) and wait until another signs');
    }
    const holders = holdersByAuthority(state, connected).get(id);
    if (holders !== undefined) {
      throw new AuthorityInUseError(mesh, id, `connected dataplanes hold certificates it signed (${holders.slice(0, 5).join(', ')}${holders.length > 5 ? ', …' : ''}); they move to the signing CA at their next renewal`);
    }
  }
  await store.delete({ type: 'CertificateAuthority', mesh, name: id }, options);
}

function holdersByAuthority(state: MeshResources, connected: ReadonlySet<string>): Map<string, string[]> {
  const holders = new Map<string, string[]>();
  for (const [name, status] of state.tls) {
    const { issuer } = status.resource;
    if (issuer === '' || !connected.has(name)) continue;
    const list = holders.get(issuer);
    if (list === undefined) holders.set(issuer, [name]);
    else list.push(name);
  }
  for (const list of holders.values()) list.sort();
  return holders;
}

function notAfterOf(authority: CertificateAuthority): Date {
  return new x509.X509Certificate(authority.certificate).notAfter;
}
