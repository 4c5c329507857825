import { ChanceryError, memoised, memoisedOn } from '../common/index.js';
import { anyOf, CLUSTER, encodeResource, lookupType, ResourceSet, SECRET, type EncodedResource } from '../xds/index.js';
import { ADS_CONFIG_SOURCE } from './envoy-fragments.js';
import type { Held, MeshResources } from './generation-input.js';
import { mtlsModeOf, serviceSpiffeId, spiffeIdsOf, trustBundleOf, unreportedInbound } from './mesh-tls.js';
import { IDENTITY_SECRET, trustSecretName } from './names.js';
import type { Dataplane, DataplaneTls, Mesh, MtlsMode } from './resources.js';

/**
 * How Envoy is told to speak mTLS (reference/mtls.md §2): workload certificate and trust bundle
 * as SDS Secrets on the ADS stream, named by the TLS contexts of inbound listeners and outbound
 * clusters; and which of those get TLS, from what every dataplane has ACKed (I8).
 */

export const DOWNSTREAM_TLS = 'envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext';
export const UPSTREAM_TLS = 'envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext';
export const TLS_INSPECTOR = 'envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector';

/** A node's workload certificate, as the instance serving it holds it: the generator's input (identity issues it). */
export interface NodeCertificate {
  /** PEM. */
  readonly certificate: string;
  /** PKCS #8 PEM. */
  readonly privateKey: string;
  /** The id of the CA that signed it. */
  readonly issuer: string;
  readonly spiffeIds: readonly string[];
}

/** The node's mesh has mTLS on and the node holds no usable certificate: the instance serving it issues one, and generates again. */
export class CertificateNeededError extends ChanceryError {
  readonly code = 'CHANCERY_MESH_CERTIFICATE_NEEDED';
  constructor(
    readonly node: string,
    readonly revision: number,
    reason: string,
  ) {
    // Returned, not thrown, at the first generation of every session of a mesh with mTLS: its
    // stack (the generator's) tells nothing, and capturing it cost 35 µs a node in a storm.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(`${node} needs a certificate at revision ${revision}: ${reason}`);
    Error.stackTraceLimit = stackTraceLimit;
  }
}

/** What a mesh state says of mTLS, computed once per state and shared by its nodes. */
export interface MeshTls {
  /** Equal ids, the same view: what plans made from it are keyed on. */
  readonly id: number;
  readonly mode: MtlsMode;
  /** The trust bundle Secret; undefined while the mesh has no CA. */
  readonly trust: EncodedResource | undefined;
  /** Whether clients get TLS to `service`: every endpoint of it accepts TLS (Kuma's rule, reference §4; I8). */
  clientTls(service: string): boolean;
}

const views = new WeakMap<MeshResources, MeshTls>();
let viewsMade = 0;

/**
 * The mesh's last view and what it was built from. A round of DataplaneTls statuses is a new
 * mesh state that most often changes nothing of the view: the same object then, so that what
 * hangs on it (each node's TLS plan, its Secrets) is not made again for every node.
 */
const lastViews = new WeakMap<Held<Mesh>, { readonly authorities: MeshResources['authorities']; readonly refused: string; readonly view: MeshTls }>();

/** The mTLS view of a mesh state. */
export function meshTls(state: MeshResources): MeshTls {
  let view = views.get(state);
  if (view === undefined) {
    view = buildMeshTls(state);
    views.set(state, view);
  }
  return view;
}

// Endpoints whose ACKed inbound accepts TLS; one that never reported, as `unreportedInbound` says.
function accepts(mode: MtlsMode, status: Held<DataplaneTls> | undefined): boolean {
  return (status?.resource.inbound ?? unreportedInbound(mode)) !== 'plaintext';
}

function buildMeshTls(state: MeshResources): MeshTls {
  const mode = mtlsModeOf(state.mesh.resource);
  const mesh = state.mesh.resource.name;
  const secured = mode !== 'disabled' && state.authorities.size > 0;
  const refused = new Set<string>();
  if (secured) {
    for (const [name, dataplane] of state.dataplanes) {
      if (accepts(mode, state.tls.get(name))) continue;
      for (const inbound of dataplane.resource.networking.inbound) refused.add(inbound.tags.service);
    }
  }
  const refusedKey = [...refused].sort().join('\n');
  const last = lastViews.get(state.mesh);
  if (last?.authorities === state.authorities && last.refused === refusedKey) return last.view;
  const trust = secured
    ? encodeResource(SECRET, trustSecretName(mesh), { name: trustSecretName(mesh), validation_context: { trusted_ca: { inline_string: trustBundleOf(state) } } })
    : undefined;
  const view: MeshTls = { id: ++viewsMade, mode, trust, clientTls: (service) => trust !== undefined && !refused.has(service) };
  lastViews.set(state.mesh, { authorities: state.authorities, refused: refusedKey, view });
  return view;
}

/** Why `certificate` cannot serve `dataplane` in `state`; undefined when it can. */
export function certificateProblem(dataplane: Dataplane, certificate: NodeCertificate | undefined, state: MeshResources): string | undefined {
  if (state.authorities.size === 0) return 'the mesh has mTLS on and its CA is being created';
  if (certificate === undefined) return 'it holds none yet';
  if (!state.authorities.has(certificate.issuer)) return `its certificate's CA ${certificate.issuer} was removed from the mesh`;
  const wanted = spiffeIdsOf(dataplane);
  if (wanted.length !== certificate.spiffeIds.length || wanted.some((id, i) => id !== certificate.spiffeIds[i])) {
    return `its certificate names ${certificate.spiffeIds.join(', ')}, and it serves ${wanted.join(', ')} now`;
  }
  return undefined;
}

const identitySecrets = new WeakMap<NodeCertificate, EncodedResource>();

/** The Secret of a node's certificate, encoded once per certificate. */
export function identitySecret(certificate: NodeCertificate): EncodedResource {
  let secret = identitySecrets.get(certificate);
  if (secret === undefined) {
    secret = encodeResource(SECRET, IDENTITY_SECRET, {
      name: IDENTITY_SECRET,
      tls_certificate: { certificate_chain: { inline_string: certificate.certificate }, private_key: { inline_string: certificate.privateKey } },
    });
    identitySecrets.set(certificate, secret);
  }
  return secret;
}

// One set per certificate and trust bundle: made again only at a renewal or a change of the CAs.
const secretSets = new WeakMap<NodeCertificate, { readonly trust: EncodedResource; readonly set: ResourceSet }>();

/** A node's Secrets: what its listeners and clusters name, and nothing else (I8). */
export function nodeSecrets(tls: MeshTls, certificate: NodeCertificate): ResourceSet {
  const trust = tls.trust!;
  const held = secretSets.get(certificate);
  if (held?.trust === trust) return held.set;
  const set = new ResourceSet([identitySecret(certificate), trust]);
  secretSets.set(certificate, { trust, set });
  return set;
}

// Per mesh, and per mesh and service: encoded once, not once per node (bench/certificates.bench.ts).
const secretNames = new Map<string, readonly string[]>();
const downstream = new Map<string, object>();
const upstream = new Map<string, object>();

/** The Secret names a TLS context of `mesh` uses: a Listener or Cluster with one lists them as its `secrets`. */
export function tlsSecretNames(mesh: string): readonly string[] {
  return memoised(secretNames, mesh, () => Object.freeze([IDENTITY_SECRET, trustSecretName(mesh)]));
}

const sdsSecret = (name: string) => ({ name, sds_config: ADS_CONFIG_SOURCE });

/** The certificate and trust, by SDS, with a check of the peer's URI SAN. */
function commonTlsContext(mesh: string, san: { readonly exact: string } | { readonly prefix: string }): object {
  return {
    tls_certificate_sds_secret_configs: [sdsSecret(IDENTITY_SECRET)],
    // The SAN matcher here, the CAs by SDS: Envoy merges the two (reference/mtls.md §2).
    combined_validation_context: {
      default_validation_context: { match_typed_subject_alt_names: [{ san_type: 'URI', matcher: san }] },
      validation_context_sds_secret_config: sdsSecret(trustSecretName(mesh)),
    },
  };
}

/** An inbound's TLS: a client certificate from the mesh is required (any service of the mesh may call). */
export function downstreamTransportSocket(mesh: string): object {
  return memoised(downstream, mesh, () => ({
    name: 'envoy.transport_sockets.tls',
    typed_config: anyOf(DOWNSTREAM_TLS, {
      require_client_certificate: { value: true },
      common_tls_context: commonTlsContext(mesh, { prefix: `spiffe://${mesh}/` }),
    }),
  }));
}

/** An outbound's TLS to `service`: the server must prove it is that service (its URI SAN, exactly). */
export function upstreamTransportSocket(mesh: string, service: string): object {
  return memoised(upstream, `${mesh}\0${service}`, () => ({
    name: 'envoy.transport_sockets.tls',
    typed_config: anyOf(UPSTREAM_TLS, { common_tls_context: commonTlsContext(mesh, { exact: serviceSpiffeId(mesh, service) }) }),
  }));
}

/** The listener filter that tells a TLS ClientHello from plaintext, for a permissive inbound. */
export const TLS_INSPECTOR_FILTER = Object.freeze({ name: 'envoy.filters.listener.tls_inspector', typed_config: anyOf(TLS_INSPECTOR) });

// A cluster as policies rendered it, with a transport socket added: made once per cluster and TLS context.
const withSockets = new WeakMap<EncodedResource, Map<string, EncodedResource>>();

/**
 * `cluster` (an EDS cluster however policies shaped it) with `transportSocket`, naming `secrets`.
 * The cluster's own message is decoded and encoded again with the socket added, so every field a
 * policy set is kept as it was.
 */
export function withTransportSocket(cluster: EncodedResource, key: string, transportSocket: object, secrets: readonly string[]): EncodedResource {
  return memoisedOn(withSockets, cluster, key, () => {
    const { value } = lookupType('google.protobuf.Any').decode(cluster.any) as unknown as { value: Uint8Array };
    const type = lookupType('envoy.config.cluster.v3.Cluster');
    const fields = type.toObject(type.decode(value));
    return encodeResource(CLUSTER, cluster.name, { ...fields, transport_socket: transportSocket }, cluster.references, secrets);
  });
}

/** An Envoy outbound's cluster with mTLS: the node's certificate presented, the service's SPIFFE ID checked (I8). */
export function envoyTlsCluster(cluster: EncodedResource, mesh: string): EncodedResource {
  const colon = cluster.name.indexOf(':');
  const service = colon === -1 ? cluster.name : cluster.name.slice(0, colon);
  return withTransportSocket(cluster, `envoy\0${mesh}`, upstreamTransportSocket(mesh, service), tlsSecretNames(mesh));
}
