import { mtlsModeOf, nodeIdOf, serviceResourceName, type Dataplane, type GenerationInput, type MeshResources } from '../mesh/index.js';
import { hasTags, selects, type MeshHTTPRoute } from '../policies/index.js';
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
      /**
       * A MeshHTTPRoute share whose target (a subset of a service, or a service) the change leaves
       * with no endpoint: its requests go to the rest of the route's service instead (I9), which
       * is not what the route says.
       */
      readonly kind: 'route-share-without-endpoints';
      readonly mesh: string;
      readonly route: string;
      /** The service the share names, and the tags of its subset (none for a whole service). */
      readonly service: string;
      readonly tags: Readonly<Record<string, string>>;
      readonly weight: number;
      /** The nodes the route applies to that call its service. */
      readonly callers: number;
      readonly nodes: readonly string[];
      readonly message: string;
    }
  | {
      /**
       * A mesh switched to `strict` mTLS while some endpoints of a service had not reported an
       * inbound accepting TLS (an app without a sidecar, a gRPC server, an Envoy not yet on
       * `permissive`): clients turn to TLS to them at once, and their calls fail.
       */
      readonly kind: 'strict-mtls-plaintext-endpoints';
      readonly mesh: string;
      readonly service: string;
      /** The service's endpoints (Dataplanes) that cannot accept TLS, the first of them, and how many. */
      readonly dataplanes: readonly string[];
      readonly count: number;
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
  const deleted: string[] = [];
  for (const name of was.dataplanes.keys()) if (is?.dataplanes.has(name) !== true) deleted.push(name);
  for (const name of deleted.sort()) {
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

const routeShareWithoutEndpoints: Rule = ({ facts }, mesh, was, is) => {
  if (is === undefined) return [];
  // Only shares this change leaves with nothing: one already dangling before is not its doing.
  const before = was === undefined ? new Set<string>() : new Set(danglingShares(was).map(({ id }) => id));
  const warnings: ChangeWarning[] = [];
  for (const { id, route, service, to, tags, weight, targetRef } of danglingShares(is)) {
    if (before.has(id)) continue;
    // The route applies to the dataplanes its targetRef selects.
    const callers = callersOf(to, mesh, is, facts, (dataplane) => selects(targetRef, dataplane.networking));
    if (callers.length === 0) continue;
    const nodes = callers.slice(0, NAMED_CALLERS);
    const subset = Object.entries(tags).map(([key, value]) => `${key}=${value}`).join(',');
    const target = subset === '' ? `service ${service}` : `subset ${service}:${subset}`;
    warnings.push({
      kind: 'route-share-without-endpoints',
      mesh,
      route,
      service,
      tags,
      weight,
      callers: callers.length,
      nodes,
      message: `MeshHTTPRoute ${route} in mesh ${mesh} sends a share (weight ${weight}) of ${to}'s requests to ${target}, which has no endpoint: for ${callers.length} node${callers.length === 1 ? '' : 's'} (${nodes.join(', ')}${callers.length > nodes.length ? ` and ${callers.length - nodes.length} more` : ''}) it goes to ${to} instead`,
    });
  }
  return warnings;
};

/**
 * docs/mtls.md: go strict only once every inbound reports `permissive`. In strict, an endpoint
 * that never reported is taken for a new one whose first configuration is strict; one that
 * existed before the switch and reported plaintext, or nothing, may well not be able to take TLS.
 */
const strictMtlsWithPlaintextEndpoints: Rule = (_change, mesh, was, is) => {
  if (was === undefined || is === undefined) return [];
  if (mtlsModeOf(was.mesh.resource) === 'strict' || mtlsModeOf(is.mesh.resource) !== 'strict') return [];
  const plaintext = new Map<string, string[]>();
  for (const [name, { resource }] of is.dataplanes) {
    // A Dataplane written with the switch is new: its very first configuration is strict.
    if (!was.dataplanes.has(name)) continue;
    const status = was.tls.get(name)?.resource.inbound;
    if (status === 'permissive' || status === 'strict') continue;
    for (const { tags } of resource.networking.inbound) {
      const list = plaintext.get(tags.service) ?? [];
      if (!list.includes(name)) list.push(name);
      plaintext.set(tags.service, list);
    }
  }
  return [...plaintext.keys()].sort().map((service) => {
    const all = plaintext.get(service)!.sort();
    const dataplanes = all.slice(0, NAMED_CALLERS);
    const more = all.length > dataplanes.length ? ` and ${all.length - dataplanes.length} more` : '';
    return {
      kind: 'strict-mtls-plaintext-endpoints' as const,
      mesh,
      service,
      dataplanes,
      count: all.length,
      message: `mesh ${mesh} switches to strict mTLS while ${all.length} endpoint${all.length === 1 ? '' : 's'} of service ${service} (${dataplanes.join(', ')}${more}) ${all.length === 1 ? 'has' : 'have'} not reported an inbound accepting TLS: calls to them will fail; go through permissive first (docs/mtls.md)`,
    };
  });
};

const RULES: readonly Rule[] = [serviceLosesLastEndpoint, routeShareWithoutEndpoints, strictMtlsWithPlaintextEndpoints, connectedDataplaneDeleted];

/** A MeshHTTPRoute share whose target has no endpoint in the mesh. */
interface DanglingShare {
  /** Identifies the share: its route, the service the route is to, and its target. */
  readonly id: string;
  readonly route: string;
  readonly to: string;
  readonly service: string;
  readonly tags: Readonly<Record<string, string>>;
  readonly weight: number;
  readonly targetRef: MeshHTTPRoute['spec']['targetRef'];
}

/** The shares of the mesh's MeshHTTPRoutes (weight above 0) whose service or subset no inbound serves. */
function danglingShares(state: MeshResources): DanglingShare[] {
  const dangling = new Map<string, DanglingShare>();
  // Read only for a mesh with routes: every write of every mesh asks.
  let inbounds: readonly Readonly<Record<string, string>>[] | undefined;
  for (const { resource } of state.policies?.values() ?? []) {
    if (resource.type !== 'MeshHTTPRoute') continue;
    for (const entry of resource.spec.to) {
      const to = entry.targetRef.name ?? '';
      for (const rule of entry.rules) {
        for (const ref of rule.default.backendRefs) {
          if (ref.weight === 0) continue;
          const tags = ref.kind === 'MeshServiceSubset' ? ref.tags : {};
          inbounds ??= [...state.dataplanes.values()].flatMap(({ resource }) => resource.networking.inbound.map(({ tags }) => tags));
          if (inbounds.some((inbound) => inbound['service'] === ref.name && hasTags(inbound, tags))) continue;
          const id = [resource.name, to, ref.name, ...Object.entries(tags).sort().map(([key, value]) => `${key}=${value}`)].join('\0');
          // Several rules may share a target: it is one share to warn of.
          if (!dangling.has(id)) dangling.set(id, { id, route: resource.name, to, service: ref.name, tags, weight: ref.weight, targetRef: resource.spec.targetRef });
        }
      }
    }
  }
  return [...dangling.values()];
}

/** The services an inbound of the mesh serves. */
function servicesOf(state: MeshResources): Set<string> {
  const services = new Set<string>();
  for (const { resource } of state.dataplanes.values()) for (const { tags } of resource.networking.inbound) services.add(tags.service);
  return services;
}

/**
 * The nodes of the mesh that call `service`, sorted: Dataplanes with an outbound to it, and
 * nodes whose stream subscribed to its Listener or Cluster by name (proxyless gRPC); of those,
 * the ones whose Dataplane `include` accepts.
 */
function callersOf(service: string, mesh: string, state: MeshResources, facts: FleetFacts, include: (dataplane: Dataplane) => boolean = () => true): string[] {
  const callers = new Set<string>();
  for (const { resource } of state.dataplanes.values()) {
    if (!include(resource)) continue;
    if (resource.networking.outbound.some((outbound) => outbound.service === service)) callers.add(nodeIdOf(mesh, resource.name));
  }
  const name = serviceResourceName(service);
  for (const { resource } of state.dataplanes.values()) {
    const node = nodeIdOf(mesh, resource.name);
    if (callers.has(node) || !include(resource)) continue;
    const subscriptions = facts.node(node)?.subscriptions;
    if (subscriptions?.['LDS']?.names.includes(name) === true || subscriptions?.['CDS']?.names.includes(name) === true) callers.add(node);
  }
  return [...callers].sort();
}
