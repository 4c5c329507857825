import {
  CLUSTER,
  ENDPOINT,
  LISTENER,
  ResourceSet,
  ROUTE,
  SECRET,
  sealSnapshot,
  type EmptyConfigurationError,
  type MissingReferenceError,
  type Snapshot,
} from '../xds/index.js';
import type { GenerationInput, MeshResources } from './generation-input.js';
import { DataplaneNotFoundError, InvalidNodeIdError, MeshNotFoundError } from './errors.js';
import { MeshPolicies } from '../policies/index.js';
import { grpcNamedSets } from './grpc-profiles.js';
import { meshServices } from './mesh-services.js';
import { nodeEndpoints } from './node-endpoints.js';
import { nodeResources, PLAINTEXT, type NodeTlsPlan } from './node-resources.js';
import { parseNodeId } from './node-id.js';
import { CertificateNeededError, certificateProblem, meshTls, nodeSecrets, type MeshTls, type NodeCertificate } from './tls-contexts.js';
import { recordTlsFacts } from './tls-readiness.js';
import { grpcClusters, grpcListeners, serverListeners } from './grpc-tls.js';

export type GenerateError =
  | InvalidNodeIdError
  | MeshNotFoundError
  | DataplaneNotFoundError
  | EmptyConfigurationError
  | MissingReferenceError
  | CertificateNeededError;

export type GenerateResult =
  | { readonly ok: true; readonly snapshot: Snapshot }
  | { readonly ok: false; readonly error: GenerateError };

/**
 * The configuration of `node` at `projection.revision` (DESIGN §6): pure and deterministic,
 * so every instance produces the same versions for the same projection (I6). A node's
 * wildcard sets hold its own Envoy listeners and clusters (and its outbounds' routes); its
 * named sets are the mesh's service resources, the same objects for every node the same
 * policies select (for every node of a mesh without policies). Encoding happens only for
 * what changed since the last call: a Dataplane or mesh left as it was costs no encoding.
 * Returns an error, never a placeholder, when there is nothing to push (I1).
 *
 * In a mesh with mTLS, `certificate` is the node's workload certificate, which the instance
 * serving it issued (it is random, so it is an input, not made here): without a usable one the
 * answer is `CertificateNeededError`, never a configuration naming a Secret it cannot hold (I8).
 */
export function generate(node: string, projection: GenerationInput, certificate?: NodeCertificate): GenerateResult {
  const { revision } = projection;
  const id = parseNodeId(node);
  if (!id.ok) return { ok: false, error: new InvalidNodeIdError(node, revision, id.reason) };
  const state = projection.meshes.get(id.mesh);
  if (state === undefined) return { ok: false, error: new MeshNotFoundError(node, revision, id.mesh) };
  const dataplane = state.dataplanes.get(id.name);
  if (dataplane === undefined) {
    return { ok: false, error: new DataplaneNotFoundError(node, revision, id.mesh, id.name) };
  }
  const services = meshServices(state);
  // The policies selecting the node, matched by a pure function of the mesh at this revision (I9).
  const selection = MeshPolicies.of(state.policies, state.mesh).select(dataplane.resource.networking);
  const grpc = grpcNamedSets(services, selection);
  const tls = meshTls(state);
  let plan = PLAINTEXT;
  let secrets = ResourceSet.empty;
  let clusters = grpc.clusters;
  let listeners = services.listeners;
  if (tls.mode !== 'disabled') {
    const problem = certificateProblem(dataplane.resource, certificate, state);
    if (problem !== undefined) return { ok: false, error: new CertificateNeededError(node, revision, problem) };
    plan = tlsPlan(id.mesh, tls);
    secrets = nodeSecrets(tls, certificate!);
    // Proxyless gRPC: its clusters and server listeners name the certificate files of its bootstrap.
    clusters = grpcClusters(id.mesh, grpc.clusters, tls);
    listeners = grpcListeners(services, serverListeners(state, tls.mode === 'strict'));
  }
  const own = nodeResources(dataplane, services, selection, plan);
  const sealed = sealSnapshot({
    node,
    revision,
    types: {
      [CLUSTER]: { wildcard: own.clusters, named: clusters },
      [ENDPOINT]: { wildcard: nodeEndpoints(services, own), named: grpc.endpoints },
      [LISTENER]: { wildcard: own.listeners, named: listeners },
      [ROUTE]: { wildcard: own.routes, named: grpc.routes },
      [SECRET]: { wildcard: secrets, named: [] },
    },
  });
  // What the node will hold once it ACKs this snapshot, for the status its instance writes then (tls-readiness.ts).
  if (sealed.ok && (tls.mode !== 'disabled' || state.tls.has(id.name))) {
    recordTlsFacts(sealed.snapshot, {
      issuer: tls.mode === 'disabled' ? '' : certificate!.issuer,
      trusts: tls.mode === 'disabled' ? [] : [...state.authorities.keys()].sort(),
      inbound: plan.inbound,
      grpcServerInbound: tls.mode === 'strict' ? 'strict' : 'plaintext',
      serves: dataplane.resource.networking.inbound.length > 0,
    });
  }
  return sealed;
}

/**
 * Whether every node is generated from `after` exactly what it is from `before` (the revision
 * aside): each mesh is the same object, or only its DataplaneTls statuses moved and its TLS view
 * with them did not (tls-contexts.ts `meshTls`). Statuses are what nodes ACKed, written back
 * in rounds (a 10,000-node storm of a new mesh writes several); such a round changes what the
 * migration rules decide only when it changes that view, which this reads, as `generate` does.
 */
export function generatesAlike(before: GenerationInput, after: GenerationInput): boolean {
  if (before.meshes.size !== after.meshes.size) return false;
  for (const [name, state] of after.meshes) {
    const was = before.meshes.get(name);
    if (was !== state && (was === undefined || !onlyStatusesMoved(was, state))) return false;
  }
  return true;
}

function onlyStatusesMoved(was: MeshResources, now: MeshResources): boolean {
  if (was.mesh !== now.mesh || was.dataplanes !== now.dataplanes || was.authorities !== now.authorities || was.policies !== now.policies) return false;
  const view = meshTls(now);
  // Without mTLS a node's TLS facts are recorded only while it has a status (`generate`).
  return meshTls(was) === view && (view.mode !== 'disabled' || was.tls === now.tls);
}

// Per mesh TLS view (the same object while no client's TLS changes): one plan for every Envoy of the mesh.
const plans = new WeakMap<MeshTls, NodeTlsPlan>();

/**
 * Which of an Envoy's listeners and clusters speak mTLS in its mesh now: its inbounds as the mode
 * says, and each cluster it is sent (its outbounds' and those its routes send to, another
 * service's included) as the view says of that cluster's service.
 */
function tlsPlan(mesh: string, tls: MeshTls): NodeTlsPlan {
  let plan = plans.get(tls);
  if (plan === undefined) {
    const inbound = tls.mode === 'strict' ? 'strict' : 'permissive';
    plan = Object.freeze({ key: `${inbound} ${tls.id}`, mesh, inbound, outboundTls: (service: string) => tls.clientTls(service) });
    plans.set(tls, plan);
  }
  return plan;
}
