import { memoised } from '../common/index.js';
import { ResourceSet, type EncodedResource } from '../xds/index.js';
import type { Held, MeshResources } from './generation-input.js';
import { protocolOf, serviceProtocol, UNKNOWN_SERVICE_PROTOCOL, type Protocol, type ServiceProtocol } from './protocols.js';
import type { Mesh } from './resources.js';
import { hasTags, type Tags } from '../policies/index.js';
import { subsetClusterName } from './names.js';
import { emptyAssignment, loadAssignment, serviceResources, type Endpoint, type ServiceResources } from './service-resources.js';

/**
 * What one mesh state gives every node in it: a set per xDS type holding the resources of
 * every service (a service exists while an inbound in the mesh has its `tags.service`).
 * The sets are the `named` part of each node's snapshot, shared by all of them.
 */
export class MeshServices {
  readonly listeners: readonly ResourceSet[];
  readonly routes: readonly ResourceSet[];
  readonly clusters: readonly ResourceSet[];
  readonly endpoints: readonly ResourceSet[];
  readonly #services: ReadonlyMap<string, ServiceResources>;
  readonly #protocols: ReadonlyMap<string, ServiceProtocol>;
  readonly #members: ReadonlyMap<string, readonly Member[]>;
  readonly #memo: MeshMemo;
  /** Subsets routes named at this state, by cluster name: built on first use. */
  #subsets: Map<string, Subset> | undefined;
  /** `missingEndpoints` at this state, by the list of services asked about (one per outbound part, shared by its nodes). */
  readonly #missing = new WeakMap<readonly string[], ResourceSet>();

  constructor(
    readonly mesh: string,
    services: ReadonlyMap<string, ServiceResources>,
    protocols: ReadonlyMap<string, ServiceProtocol>,
    members: ReadonlyMap<string, readonly Member[]>,
    memo: MeshMemo,
  ) {
    this.#services = services;
    this.#protocols = protocols;
    this.#members = members;
    this.#memo = memo;
    const previous = memo.last;
    // Listener, route and cluster depend on the service name alone, so while the set of
    // names is unchanged their sets are reused, and so are the references already checked.
    const sameNames = previous !== undefined && sameKeys(previous.#services, services);
    const all = [...services.values()];
    this.listeners = sameNames ? previous.listeners : shared(all.map((s) => s.listener));
    this.routes = sameNames ? previous.routes : shared(all.map((s) => s.route));
    this.clusters = sameNames ? previous.clusters : shared(all.map((s) => s.cluster));
    const sameEndpoints = sameNames && [...services].every(([name, s]) => previous.#services.get(name) === s);
    this.endpoints = sameEndpoints ? previous.endpoints : shared(all.map((s) => s.assignment));
  }

  /**
   * Empty ClusterLoadAssignments for those of `services` the mesh does not have, so every
   * EDS name an Envoy outbound's cluster uses is in its snapshot (I5). Memoised per mesh
   * by the missing names: nodes calling the same missing services share one set; and per list
   * asked about, so the nodes of one outbound part do not each walk it at every change.
   */
  missingEndpoints(services: readonly string[]): ResourceSet {
    return memoised(this.#missing, services, () => this.#missingOf(services));
  }

  #missingOf(services: readonly string[]): ResourceSet {
    let missing: string[] | undefined;
    for (const service of services) if (!this.#services.has(service)) (missing ??= []).push(service);
    if (missing === undefined) return ResourceSet.empty;
    const key = missing.join('\n');
    let set = this.#memo.emptyEndpoints.get(key);
    if (set === undefined) {
      set = new ResourceSet(missing.map(emptyAssignment));
      this.#memo.emptyEndpoints.set(key, set);
    }
    return set;
  }

  /** What a service speaks to its callers: `tcp` while no inbound serves it. */
  protocol(name: string): ServiceProtocol {
    return this.#protocols.get(name) ?? UNKNOWN_SERVICE_PROTOCOL;
  }

  /**
   * The endpoints of `service` whose inbounds carry every one of `tags` (a MeshServiceSubset),
   * with their ClusterLoadAssignment, named `subsetClusterName(service, tags)`.
   */
  subset(service: string, tags: Tags): Subset {
    const name = subsetClusterName(service, tags);
    this.#subsets ??= new Map();
    let subset = this.#subsets.get(name);
    if (subset === undefined) {
      const endpoints = (this.#members.get(service) ?? []).filter((member) => hasTags(member.tags, tags));
      subset = Object.freeze({ name, size: endpoints.length, assignment: loadAssignment(this.mesh, name, endpoints) });
      this.#subsets.set(name, subset);
    }
    return subset;
  }

  /** Every service some inbound serves, sorted. */
  get names(): readonly string[] {
    return (this.#names ??= Object.freeze([...this.#services.keys()].sort()));
  }
  #names: readonly string[] | undefined;

  /** The resources of one service, or undefined while no inbound serves it. */
  service(name: string): ServiceResources | undefined {
    return this.#services.get(name);
  }
}

/** One inbound serving a service: where, and with which tags. */
interface Member extends Endpoint {
  readonly tags: Tags;
}

/** The endpoints of a service with some tags: how many, and their ClusterLoadAssignment. */
export interface Subset {
  readonly name: string;
  readonly size: number;
  readonly assignment: EncodedResource;
}

/** A list of shared sets, frozen: every node's snapshot holds it as it is, without a copy of its own. */
function shared(resources: readonly EncodedResource[]): readonly ResourceSet[] {
  return Object.freeze([new ResourceSet(resources)]);
}

/** What carries over between states of one mesh, so an unrelated change re-encodes nothing. */
interface MeshMemo {
  last: MeshServices | undefined;
  readonly emptyEndpoints: Map<string, ResourceSet>;
}

// Keyed by the stored Mesh, which stays the same object while only its dataplanes change and
// goes (with the memo) when the mesh is deleted or rewritten.
const memos = new WeakMap<Held<Mesh>, MeshMemo>();
// By the mesh state's dataplanes map, all they are built from besides the mesh's name: a state
// that changes only the mesh's CAs, statuses or policies keeps its services and what hangs on them.
const byDataplanes = new WeakMap<MeshResources['dataplanes'], MeshServices>();

/** The shared service sets of a mesh state, built once per dataplanes map. */
export function meshServices(state: MeshResources): MeshServices {
  let services = byDataplanes.get(state.dataplanes);
  if (services === undefined) {
    services = build(state);
    byDataplanes.set(state.dataplanes, services);
  }
  return services;
}

function build(state: MeshResources): MeshServices {
  let memo = memos.get(state.mesh);
  if (memo === undefined) {
    memo = { last: undefined, emptyEndpoints: new Map() };
    memos.set(state.mesh, memo);
  }
  const endpoints = new Map<string, Member[]>();
  const declared = new Map<string, Set<Protocol>>();
  for (const { resource } of state.dataplanes.values()) {
    const { address, inbound } = resource.networking;
    for (const { port, tags } of inbound) {
      const list = endpoints.get(tags.service);
      if (list === undefined) endpoints.set(tags.service, [{ address, port, tags }]);
      else list.push({ address, port, tags });
      const protocols = declared.get(tags.service);
      if (protocols === undefined) declared.set(tags.service, new Set([protocolOf(tags)]));
      else protocols.add(protocolOf(tags));
    }
  }
  const mesh = state.mesh.resource.name;
  const services = new Map<string, ServiceResources>();
  for (const [service, list] of endpoints) {
    services.set(service, serviceResources(mesh, service, list, memo.last?.service(service)));
  }
  const protocols = new Map([...declared].map(([service, each]) => [service, serviceProtocol(each)]));
  const built = new MeshServices(mesh, services, protocols, endpoints, memo);
  memo.last = built;
  return built;
}

function sameKeys(a: ReadonlyMap<string, unknown>, b: ReadonlyMap<string, unknown>): boolean {
  if (a.size !== b.size) return false;
  for (const key of a.keys()) if (!b.has(key)) return false;
  return true;
}
