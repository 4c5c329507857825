import { parseAge } from '../common/index.js';
import type { Held, MeshResources } from './generation-input.js';
import type { CertificateAuthority, Dataplane, DataplaneTls, Mesh, MtlsMode } from './resources.js';

/**
 * What a mesh's mTLS settings and CAs say, as pure functions of a mesh state (DESIGN §6 "Mesh
 * mTLS"): the generator, the instance that issues certificates and the API all read them here,
 * so every instance answers the same from the same revision (I6).
 */

/** A mesh's mTLS mode: `disabled` when it says nothing. */
export function mtlsModeOf(mesh: Mesh): MtlsMode {
  return mesh.mtls?.mode ?? 'disabled';
}

/**
 * What the inbound of a dataplane that has not reported yet is taken to accept: in a strict mesh,
 * strict (its first configuration is strict, so it never serves plaintext, and serves nothing
 * until it holds that); otherwise plaintext. The generator reads a missing status so, and an
 * agent's first certificate records it so, or clients would turn to plaintext towards a new
 * strict server until its session reported.
 */
export function unreportedInbound(mode: MtlsMode): DataplaneTls['inbound'] {
  return mode === 'strict' ? 'strict' : 'plaintext';
}

/** How long the mesh's workload certificates live, in ms (validation bounds it to 30 s .. 90 d). */
export function certificateTtlOf(mesh: Mesh): number {
  return parseAge(mesh.mtls?.certificateTTL ?? '24h')!;
}

/** A certificate is renewed once this share of its life has passed (DESIGN §6: at 2/3). */
export const RENEWAL_POINT = 2 / 3;

/** When a certificate valid from `notBefore` to `notAfter` (epoch ms) is due for renewal. */
export function renewalDue(notBefore: number, notAfter: number): number {
  return Math.round(notBefore + (notAfter - notBefore) * RENEWAL_POINT);
}

/** The trust domain of a mesh's SPIFFE IDs: the mesh's name. */
export function spiffeTrustDomain(mesh: string): string {
  return `spiffe://${mesh}`;
}

/** The SPIFFE ID of a service: what a client checks a server's certificate for. */
export function serviceSpiffeId(mesh: string, service: string): string {
  return `spiffe://${mesh}/${service}`;
}

/**
 * The URI SANs of a dataplane's certificate: one per service it serves, sorted; a dataplane that
 * serves none (a pure client) is `spiffe://<mesh>/dataplane/<name>`, a path no service name (a
 * DNS label, without `/`) can take.
 */
export function spiffeIdsOf(dataplane: Dataplane): readonly string[] {
  let ids = spiffeIds.get(dataplane);
  if (ids === undefined) {
    const services = [...new Set(dataplane.networking.inbound.map((inbound) => inbound.tags.service))].sort();
    ids = Object.freeze(services.length === 0 ? [`spiffe://${dataplane.mesh}/dataplane/${dataplane.name}`] : services.map((service) => serviceSpiffeId(dataplane.mesh, service)));
    spiffeIds.set(dataplane, ids);
  }
  return ids;
}

// Asked at every generation of a node of a mesh with mTLS: once per stored Dataplane.
const spiffeIds = new WeakMap<Dataplane, readonly string[]>();

const AUTHORITY_ID = /^ca-([1-9]\d{0,8})$/;

/** The id of a mesh's `n`th CA: `ca-1`, `ca-2`, … */
export function authorityId(n: number): string {
  return `ca-${n}`;
}

/** The creation order of a CA id (`ca-3` → 3); 0 for an id Chancery did not make. */
export function authorityOrdinal(id: string): number {
  const match = AUTHORITY_ID.exec(id);
  return match === null ? 0 : Number(match[1]);
}

/** A mesh's CAs, oldest first. */
export function authoritiesOf(state: MeshResources): readonly Held<CertificateAuthority>[] {
  return [...state.authorities.values()].sort((a, b) => authorityOrdinal(a.resource.name) - authorityOrdinal(b.resource.name));
}

/**
 * The mesh's trust bundle: every CA's certificate, oldest first, each on lines of its own (a PEM
 * run into the next is not read past the first: Envoy NACKs "Failed to load trusted CA
 * certificates").
 */
export function trustBundleOf(state: MeshResources): string {
  return authoritiesOf(state)
    .map(({ resource }) => (resource.certificate.endsWith('\n') ? resource.certificate : `${resource.certificate}\n`))
    .join('');
}

/**
 * The CA that signs the mesh's certificates now: the newest that every dataplane verifying
 * certificates (one whose status lists a trust bundle) has ACKed in its bundle, so nothing it
 * signs is presented before every peer trusts it (I8); the oldest when none is trusted by all
 * yet. Undefined while the mesh has no CA. A rotated-in CA therefore signs only once the fleet
 * has ACKed the bundle holding it; a dataplane that keeps its old bundle (gone without its
 * Dataplane being deleted) keeps the old CA signing, which `GET /meshes/{mesh}/ca` shows.
 */
export function signingAuthority(state: MeshResources): Held<CertificateAuthority> | undefined {
  let signing = signers.get(state);
  if (signing === undefined) {
    signing = { authority: findSigningAuthority(state) };
    signers.set(state, signing);
  }
  return signing.authority;
}

// Once per mesh state: every certificate of a storm asks, and the answer reads every status.
const signers = new WeakMap<MeshResources, { readonly authority: Held<CertificateAuthority> | undefined }>();

function findSigningAuthority(state: MeshResources): Held<CertificateAuthority> | undefined {
  const authorities = authoritiesOf(state);
  for (let i = authorities.length - 1; i >= 0; i--) {
    const candidate = authorities[i]!;
    if (trustedByAll(state, candidate.resource.name)) return candidate;
  }
  return authorities[0];
}

function trustedByAll(state: MeshResources, id: string): boolean {
  for (const [name, status] of state.tls) {
    const { trusts } = status.resource;
    // A status of a Dataplane deleted since is no verifier; one with no bundle verifies nothing.
    if (trusts.length === 0 || !state.dataplanes.has(name)) continue;
    if (!trusts.includes(id)) return false;
  }
  return true;
}

/** The dataplanes whose bundle does not hold CA `id` yet: what keeps it from signing. */
export function notYetTrusting(state: MeshResources, id: string): readonly string[] {
  const waiting: string[] = [];
  for (const [name, status] of state.tls) {
    const { trusts } = status.resource;
    if (trusts.length > 0 && state.dataplanes.has(name) && !trusts.includes(id)) waiting.push(name);
  }
  return waiting.sort();
}
