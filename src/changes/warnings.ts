import { nodeIdOf, parseNodeId, serviceResourceName, type GenerationInput, type MeshResources } from '../mesh/index.js';
import type { FleetFacts } from './node-facts.js';

/** Callers a warning names at most; `callers` counts them all. */
const NAMED_CALLERS = 10;

/**
 * A consequence of a change that causes outages (issue 31), as a typed value: each kind has
 * the fields needed to act on it, and `message` says it in a sentence.
 */
export type ChangeWarning =
  | {
      /** A service the change leaves with no endpoint while nodes call it: their calls fail. */
      readonly kind: 'service-loses-last-endpoint';
      readonly mesh: string;
      readonly service: string;
      /** How many nodes call it: Envoy outbounds to it, and gRPC clients subscribed to it. */
      readonly callers: number;
      /** The first of them, by node id. */
      readonly nodes: readonly string[];
      readonly message: string;
    }
  | {
      /** A Dataplane deleted while its node holds a stream: the stream is ended, the proxy keeps stale configuration. */
      readonly kind: 'connected-dataplane-deleted';
      readonly mesh: string;
      readonly dataplane: string;
      readonly node: string;
      /** The instances holding its stream. */
      readonly connectedTo: readonly string[];
      readonly message: string;
    };

export type WarningKind = ChangeWarning['kind'];

/** What a rule looks at: the resources before and after a change, and the fleet's sessions. */
export interface ChangeView {
  readonly before: GenerationInput;
  readonly after: GenerationInput;
  readonly facts: FleetFacts;
}

type Rule = (change: ChangeView, mesh: string, was: MeshResources | undefined, is: MeshResources | undefined) => ChangeWarning[];

/**
 * The warnings of a change, each rule run over every mesh the change touched (a projection
 * gives an unchanged mesh the same object). A new kind of warning is one more rule here.
 */
export function warningsOf(change: ChangeView): ChangeWarning[] {
  const warnings: ChangeWarning[] = [];
  const { before, after } = change;
  for (const mesh of [...new Set([...before.meshes.keys(), ...after.meshes.keys()])].sort()) {
    const was = before.meshes.get(mesh);
    const is = after.meshes.get(mesh);
    if (was === is) continue;
    for (const rule of RULES) warnings.push(...rule(change, mesh, was, is));
  }
  return warnings;
}

const serviceLosesLastEndpoint: Rule = ({ facts }, mesh, was, is) => {
  if (was === undefined || is === undefined) return [];
  const served = servicesOf(is);
  const lost = [...servicesOf(was)].filter((service) => !served.has(service)).sort();
  if (lost.length === 0) return [];
  return lost.flatMap((service) => {
    const callers = callersOf(service, mesh, is, facts);
    if (callers.length === 0) return [];
    const nodes = callers.slice(0, NAMED_CALLERS);
    const more = callers.length > nodes.length ? ` and ${callers.length - nodes.length} more` : '';
    return [
      {
        kind: 'service-loses-last-endpoint' as const,
        mesh,
        service,
        callers: callers.length,
        nodes,
        message: `service ${service} in mesh ${mesh} loses its last endpoint while ${callers.length} node${callers.length === 1 ? '' : 's'} call it (${nodes.join(', ')}${more}): their calls will fail`,
      },
    ];
  });
};

const connectedDataplaneDeleted: Rule = ({ facts }, mesh, was, is) => {
  if (was === undefined) return [];
  const warnings: ChangeWarning[] = [];
  for (const name of [...was.dataplanes.keys()].sort()) {
    if (is?.dataplanes.has(name) === true) continue;
    const node = nodeIdOf(mesh, name);
    const connectedTo = facts.node(node)?.connectedTo ?? [];
    if (connectedTo.length === 0) continue;
    warnings.push({
      kind: 'connected-dataplane-deleted',
      mesh,
      dataplane: name,
      node,
      connectedTo,
      message: `Dataplane ${name} in mesh ${mesh} is deleted while node ${node} is connected (to ${connectedTo.join(', ')}): its stream is ended and it keeps the configuration it holds`,
    });
  }
  return warnings;
};

const RULES: readonly Rule[] = [serviceLosesLastEndpoint, connectedDataplaneDeleted];

/** The services an inbound of the mesh serves. */
function servicesOf(state: MeshResources): Set<string> {
  const services = new Set<string>();
  for (const { resource } of state.dataplanes.values()) for (const { tags } of resource.networking.inbound) services.add(tags.service);
  return services;
}

/**
 * The nodes of the mesh that call `service`, sorted: Dataplanes with an outbound to it, and
 * nodes whose stream subscribed to its Listener or Cluster by name (proxyless gRPC).
 */
function callersOf(service: string, mesh: string, state: MeshResources, facts: FleetFacts): string[] {
  const callers = new Set<string>();
  for (const { resource } of state.dataplanes.values()) {
    if (resource.networking.outbound.some((outbound) => outbound.service === service)) callers.add(nodeIdOf(mesh, resource.name));
  }
  for (const [node, known] of facts.nodes()) {
    const id = parseNodeId(node);
    if (!id.ok || id.mesh !== mesh || !state.dataplanes.has(id.name)) continue;
    const { LDS, CDS } = known.subscriptions;
    const name = serviceResourceName(service);
    if (LDS?.names.includes(name) === true || CDS?.names.includes(name) === true) callers.add(node);
  }
  return [...callers].sort();
}
