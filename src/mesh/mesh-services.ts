import { memoised } from '../common/index.js';
import { ResourceSet, type EncodedResource } from '../xds/index.js';
import type { Held, MeshResources } from './generation-input.js';
import { protocolOf, serviceProtocol, UNKNOWN_SERVICE_PROTOCOL, type ServiceProtocol } from './protocols.js';
import type { Dataplane, Mesh } from './resources.js';
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
    const previous = memo.built?.services;
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

  /** The inbounds serving `service`, in no particular order; none while no inbound serves it. */
  members(service: string): readonly Member[] {
    return this.#members.get(service) ?? [];
  }

  /** The resources of one service, or undefined while no inbound serves it. */
  service(name: string): ServiceResources | undefined {
    return this.#services.get(name);
  }
}

/** One inbound serving a service: where, and with which tags (the service's among them). */
interface Member extends Endpoint {
  readonly tags: Dataplane['networking']['inbound'][number]['tags'];
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

/**
 * A mesh state's inbounds by service, then by dataplane name: what the next state's services are
 * built from, touching only the services whose dataplanes changed.
 */
type Inbounds = ReadonlyMap<string, ReadonlyMap<string, readonly Member[]>>;

/** The last state of a mesh that was built: its dataplanes, their inbounds, and its services. */
interface Built {
  readonly dataplanes: MeshResources['dataplanes'];
  readonly inbounds: Inbounds;
  readonly services: MeshServices;
}

/** What carries over between states of one mesh, so an unrelated change re-encodes nothing. */
interface MeshMemo {
  built: Built | undefined;
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

/**
 * Builds a mesh state's services from the last state built, whichever it was (the live one, or a
 * preview's): only the services whose dataplanes were added, removed or rewritten since are built
 * anew; the others are the last state's, as they were. A change of one endpoint at 10,000
 * dataplanes no longer lists and sorts every inbound of the mesh (7–10 ms in process, 50 ms in a
 * 10,000-node server: 0.7 ms now).
 */
function build(state: MeshResources): MeshServices {
  let memo = memos.get(state.mesh);
  if (memo === undefined) {
    memo = { built: undefined, emptyEndpoints: new Map() };
    memos.set(state.mesh, memo);
  }
  const previous = memo.built?.services;
  const { inbounds, touched } = inboundsAfter(memo.built ?? NOTHING_BUILT, state.dataplanes);
  const mesh = state.mesh.resource.name;
  const services = new Map<string, ServiceResources>();
  const protocols = new Map<string, ServiceProtocol>();
  const members = new Map<string, readonly Member[]>();
  for (const [service, byDataplane] of inbounds) {
    if (previous !== undefined && !touched.has(service)) {
      services.set(service, previous.service(service)!);
      protocols.set(service, previous.protocol(service));
      members.set(service, previous.members(service));
      continue;
    }
    const list = [...byDataplane.values()].flat();
    services.set(service, serviceResources(mesh, service, list, previous?.service(service)));
    protocols.set(service, serviceProtocol(new Set(list.map((member) => protocolOf(member.tags)))));
    members.set(service, list);
  }
  const built = new MeshServices(mesh, services, protocols, members, memo);
  memo.built = { dataplanes: state.dataplanes, inbounds, services: built };
  return built;
}

/** Before a mesh's first build: every Dataplane is added. */
const NOTHING_BUILT: Omit<Built, 'services'> = { dataplanes: new Map(), inbounds: new Map() };

/**
 * `base`'s inbounds with those of the dataplanes added, removed or rewritten since, and the
 * services those dataplanes serve (before or after): the only ones whose members may differ.
 */
function inboundsAfter(base: Omit<Built, 'services'>, dataplanes: MeshResources['dataplanes']): { inbounds: Inbounds; touched: ReadonlySet<string> } {
  const changed: string[] = [];
  let present = 0;
  for (const [name, held] of dataplanes) {
    const before = base.dataplanes.get(name);
    if (before !== undefined) present++;
    if (before !== held) changed.push(name);
  }
  // Some of the base's dataplanes are no longer there: removed.
  if (present < base.dataplanes.size) {
    for (const name of base.dataplanes.keys()) if (!dataplanes.has(name)) changed.push(name);
  }
  const inbounds = new Map(base.inbounds);
  const touched = new Set<string>();
  const copied = new Set<string>();
  const writable = (service: string) => {
    if (!copied.has(service)) {
      copied.add(service);
      inbounds.set(service, new Map(inbounds.get(service)));
    }
    return inbounds.get(service) as Map<string, readonly Member[]>;
  };
  for (const name of changed) {
    const before = base.dataplanes.get(name);
    const after = dataplanes.get(name);
    for (const [service] of before === undefined ? [] : byService(membersOf(before))) {
      touched.add(service);
      writable(service).delete(name);
    }
    for (const [service, list] of after === undefined ? [] : byService(membersOf(after))) {
      touched.add(service);
      writable(service).set(name, list);
    }
  }
  for (const service of touched) if (inbounds.get(service)!.size === 0) inbounds.delete(service);
  return { inbounds, touched };
}

// A stored Dataplane's inbounds, made once per stored object.
const membersByDataplane = new WeakMap<Held<Dataplane>, readonly Member[]>();

/** A dataplane's inbounds: where, and with which tags. */
function membersOf(held: Held<Dataplane>): readonly Member[] {
  return memoised(membersByDataplane, held, () => {
    const { address, inbound } = held.resource.networking;
    return inbound.map(({ port, tags }) => ({ address, port, tags }));
  });
}

/** `members` by the service each serves; one inbound, the most common, makes no map. */
function byService(members: readonly Member[]): Iterable<readonly [string, readonly Member[]]> {
  if (members.length === 1) return [[members[0]!.tags.service, members]];
  const grouped = new Map<string, Member[]>();
  for (const member of members) {
    const list = grouped.get(member.tags.service);
    if (list === undefined) grouped.set(member.tags.service, [member]);
    else list.push(member);
  }
  return grouped;
}

function sameKeys(a: ReadonlyMap<string, unknown>, b: ReadonlyMap<string, unknown>): boolean {
  if (a.size !== b.size) return false;
  for (const key of a.keys()) if (!b.has(key)) return false;
  return true;
}
