import { appliesTo, MeshPolicies, type PolicyRef, type PolicySelection } from '../policies/index.js';
import { DataplaneNotFoundError, InvalidNodeIdError, MeshNotFoundError } from './errors.js';
import type { FieldExplanation } from './field-rows.js';
import type { GenerationInput, MeshResources } from './generation-input.js';
import { meshServices, type MeshServices } from './mesh-services.js';
import { inboundListenerName, outboundListenerName } from './names.js';
import { parseNodeId } from './node-id.js';
import { clusterPlanOf, routePlanOf } from './plans.js';
import { PROTOCOL_TAG, protocolOf, type Protocol } from './protocols.js';
import type { ClientKind, RouteExplanation } from './route-plan.js';

/**
 * What the policies did to one node (DESIGN §7 `chancery inspect NODE --policies`): for each
 * inbound and outbound the effective configuration, each field with the policy that set it (or
 * the client's default), the policies that lost, what was not applied and why, and the errors
 * a share with nowhere to go caused. Built from the very plans the generator rendered (I9).
 */
export interface NodePolicies {
  readonly node: string;
  readonly revision: number;
  /** Every policy whose top-level targetRef selects the node. */
  readonly selectedBy: readonly PolicyRef[];
  readonly inbounds: readonly InboundExplanation[];
  /** The node's Envoy outbounds. */
  readonly outbounds: readonly OutboundExplanation[];
  /**
   * What a proxyless gRPC client on the node gets for each service a policy configures
   * (`xds:///<service>`); every other service of the mesh gets the defaults.
   */
  readonly grpc: readonly OutboundExplanation[];
}

export interface InboundExplanation {
  readonly listener: string;
  readonly service: string;
  readonly protocol: Protocol;
  /** Whether the protocol is the inbound's tag, or the default (`tcp`). */
  readonly protocolFrom: 'tag' | 'default';
  /** Policies that name this service in a `to[]`: the dataplanes calling it apply them, not this one. */
  readonly configuredForCallers: readonly PolicyRef[];
}

export interface OutboundExplanation {
  readonly client: ClientKind;
  /** The Envoy outbound listener; absent for a gRPC client. */
  readonly listener?: string;
  readonly service: string;
  readonly protocol: { readonly value: Protocol; readonly declared: readonly Protocol[]; readonly note?: string };
  /** Every policy with an entry for these calls, strongest first. */
  readonly policies: readonly PolicyRef[];
  readonly fields: readonly FieldExplanation[];
  readonly routes: readonly RouteExplanation[];
  readonly errors: readonly string[];
}

export type ExplainResult =
  | { readonly ok: true; readonly policies: NodePolicies }
  | { readonly ok: false; readonly error: InvalidNodeIdError | MeshNotFoundError | DataplaneNotFoundError };

export function explainPolicies(node: string, input: GenerationInput): ExplainResult {
  const { revision } = input;
  const id = parseNodeId(node);
  if (!id.ok) return { ok: false, error: new InvalidNodeIdError(node, revision, id.reason) };
  const state = input.meshes.get(id.mesh);
  if (state === undefined) return { ok: false, error: new MeshNotFoundError(node, revision, id.mesh) };
  const stored = state.dataplanes.get(id.name);
  if (stored === undefined) return { ok: false, error: new DataplaneNotFoundError(node, revision, id.mesh, id.name) };
  const dataplane = stored.resource;
  const services = meshServices(state);
  const matcher = MeshPolicies.of(state.policies, state.mesh);
  const selection = matcher.select(dataplane.networking);
  const { address, inbound, outbound } = dataplane.networking;
  return {
    ok: true,
    policies: {
      node,
      revision,
      selectedBy: selection.policies.map(({ type, name }) => ({ type, name })),
      inbounds: inbound.map(({ port, tags }) => ({
        listener: inboundListenerName(address, port),
        service: tags.service,
        protocol: protocolOf(tags),
        protocolFrom: tags[PROTOCOL_TAG] === undefined ? 'default' : 'tag',
        configuredForCallers: callersPolicies(state, matcher, tags.service),
      })),
      outbounds: outbound.map(({ port, service }) => explainOutbound('envoy', service, services, selection, outboundListenerName(port))),
      grpc: services.names
        .filter((service) => selection.outbound(service).policies.length > 0)
        .map((service) => explainOutbound('grpc', service, services, selection)),
    },
  };
}

function explainOutbound(client: ClientKind, service: string, services: MeshServices, selection: PolicySelection, listener?: string): OutboundExplanation {
  const ops = selection.outbound(service);
  const routes = routePlanOf(services, client, ops);
  const cluster = clusterPlanOf(services, client, ops);
  const { protocol, declared } = services.protocol(service);
  return {
    client,
    ...(listener !== undefined && { listener }),
    service,
    protocol: { value: protocol, declared, ...protocolNote(service, protocol, declared) },
    policies: ops.policies,
    fields: [...cluster.explained, ...routes.fields],
    routes: routes.routesExplained,
    errors: routes.errors,
  };
}

function protocolNote(service: string, protocol: Protocol, declared: readonly Protocol[]): { note?: string } {
  if (declared.length === 0) return { note: `no inbound serves ${service} yet: a TCP proxy` };
  if (declared.length > 1) return { note: `its inbounds declare ${declared.join(', ')}: their lowest common protocol is ${protocol}` };
  return {};
}

/** The policies with a `to[]` entry naming `service`, which its callers apply. */
function callersPolicies(state: MeshResources, matcher: MeshPolicies, service: string): PolicyRef[] {
  if (state.policies === undefined) return [];
  return matcher.all
    .filter((policy) => policy.spec.to.some((entry) => entry.targetRef.kind === 'MeshService' && appliesTo(entry.targetRef, service)))
    .map(({ type, name }) => ({ type, name }));
}
