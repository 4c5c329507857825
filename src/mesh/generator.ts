import {
  CLUSTER,
  ENDPOINT,
  LISTENER,
  ROUTE,
  sealSnapshot,
  type EmptyConfigurationError,
  type MissingReferenceError,
  type Snapshot,
} from '../xds/index.js';
import type { GenerationInput } from './generation-input.js';
import { DataplaneNotFoundError, InvalidNodeIdError, MeshNotFoundError } from './errors.js';
import { MeshPolicies } from '../policies/index.js';
import { grpcNamedSets } from './grpc-profiles.js';
import { meshServices } from './mesh-services.js';
import { nodeEndpoints } from './node-endpoints.js';
import { nodeResources } from './node-resources.js';
import { parseNodeId } from './node-id.js';

export type GenerateError =
  | InvalidNodeIdError
  | MeshNotFoundError
  | DataplaneNotFoundError
  | EmptyConfigurationError
  | MissingReferenceError;

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
 */
export function generate(node: string, projection: GenerationInput): GenerateResult {
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
  const selection = MeshPolicies.of(state.policies, state).select(dataplane.resource.networking);
  const own = nodeResources(dataplane, services, selection);
  const grpc = grpcNamedSets(services, selection);
  return sealSnapshot({
    node,
    revision,
    types: {
      [CLUSTER]: { wildcard: own.clusters, named: grpc.clusters },
      [ENDPOINT]: { wildcard: nodeEndpoints(services, own), named: grpc.endpoints },
      [LISTENER]: { wildcard: own.listeners, named: services.listeners },
      [ROUTE]: { wildcard: own.routes, named: grpc.routes },
    },
  });
}
