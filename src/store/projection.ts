import { isCredential, isMeshScoped, keyOf, policyId, type CertificateAuthority, type Credential, type Dataplane, type DataplaneTls, type Mesh, type Resource, type ResourceKey, type Valid } from '../mesh/index.js';
import { isPolicyType, type Policy } from '../policies/index.js';
import { keyIdOf } from './write-plan.js';
import { asSeq, type Checkpoint, type MeshState, type Projection, type ResourceEvent, type Seq, type Stored } from './types.js';

/** The projection of an empty log: revision 0, no meshes. */
export function emptyProjection(): Projection {
  return { revision: asSeq(0), meshes: new Map(), credentials: new Map() };
}

/**
 * Folds events into a projection, purely: the input is never changed. Only meshes the batch
 * touches get a new `MeshState`; the others keep their object, which consumers memoise on
 * (the generator, at 10,000 dataplanes). Each touched mesh's dataplanes are copied once per
 * batch, not once per event.
 *
 * Each event is applied once, in order (I7): one with `seq <= revision` was already applied
 * and is skipped. Gaps would be fine, although no log leaves any (see sql-event-log.ts).
 * A Dataplane event for a mesh that does not exist is skipped, deterministically on every
 * instance: its mesh was deleted by a batch that raced it.
 */
export function applyEvents(projection: Projection, events: readonly ResourceEvent[]): Projection {
  const batch = new Batch(projection);
  let revision = projection.revision;
  let at = projection.at;
  for (const event of events) {
    if (event.seq <= revision) continue;
    revision = event.seq;
    at = event.at;
    if (event.kind === 'upserted') {
      const resource = event.resource;
      if (resource.type === 'Mesh') batch.putMesh(storedOf(resource, event));
      else if (resource.type === 'Dataplane') batch.putDataplane(storedOf(resource, event));
      else if (resource.type === 'DataplaneTls') batch.putMember('tls', storedOf(resource, event));
      else if (isPolicy(resource)) batch.putPolicy(storedOf(resource, event));
      else batch.putCredential(storedOf(resource, event));
    } else if (isPolicyType(event.key.type)) {
      batch.deletePolicy(event.key.mesh, policyId(event.key.type, event.key.name));
    } else if (event.key.type === 'DataplaneTls') {
      batch.deleteMember('tls', event.key.mesh, event.key.name);
    } else if (event.key.type !== 'Mesh' && event.key.type !== 'Dataplane') {
      batch.deleteCredential(event.key);
    } else if (event.key.type === 'Mesh') {
      batch.deleteMesh(event.key.name);
    } else {
      batch.deleteDataplane(event.key.mesh, event.key.name);
    }
  }
  return revision === projection.revision ? projection : batch.finish(revision, at);
}

/**
 * The projection a checkpoint holds: its resources at its seq. A Dataplane whose mesh the
 * checkpoint lacks is skipped, as `applyEvents` skips it (no checkpoint written from a
 * projection has one).
 */
export function projectionOf(checkpoint: Checkpoint): Projection {
  const meshes = new Map<string, WritableMeshState>();
  const credentials = new Map<string, Stored<Credential>>();
  const policies = new Map<string, Map<string, Stored<Policy>>>();
  for (const stored of checkpoint.resources) {
    if (stored.resource.type === 'Mesh') {
      meshes.set(stored.resource.name, { mesh: stored as Stored<Mesh>, dataplanes: new Map(), authorities: new Map(), tls: new Map() });
    }
  }
  for (const stored of checkpoint.resources) {
    const { resource } = stored;
    if (resource.type === 'Dataplane') meshes.get(resource.mesh)?.dataplanes.set(resource.name, stored as Stored<Dataplane>);
    else if (resource.type === 'DataplaneTls') meshes.get(resource.mesh)?.tls.set(resource.name, stored as Stored<DataplaneTls>);
    else if (isPolicy(resource) && meshes.has(resource.mesh)) {
      let ofMesh = policies.get(resource.mesh);
      if (ofMesh === undefined) policies.set(resource.mesh, (ofMesh = new Map()));
      ofMesh.set(policyId(resource.type, resource.name), stored as Stored<Policy>);
    } else if (isCredential(resource) && (!('mesh' in resource) || meshes.has(resource.mesh))) {
      credentials.set(keyIdOf(keyOf(resource)), stored as Stored<Credential>);
      if (resource.type === 'CertificateAuthority') meshes.get(resource.mesh)!.authorities.set(resource.name, stored as Stored<CertificateAuthority>);
    }
  }
  // As `applyEvents` leaves it: a mesh without policies has no `policies`.
  for (const [name, ofMesh] of policies) meshes.set(name, { ...meshes.get(name)!, policies: ofMesh });
  return { revision: checkpoint.seq, meshes, credentials };
}

/** The checkpoint of a projection: every resource it holds, each mesh before its dataplanes. */
export function checkpointOf(projection: Projection): Checkpoint {
  const resources: Stored<Resource>[] = [];
  for (const state of projection.meshes.values()) {
    resources.push(state.mesh);
    for (const dataplane of state.dataplanes.values()) resources.push(dataplane);
    for (const status of state.tls.values()) resources.push(status);
    for (const policy of state.policies?.values() ?? []) resources.push(policy);
  }
  resources.push(...projection.credentials.values());
  return { seq: projection.revision, resources };
}

/** A resource as it was at some revision: `stored` undefined when it did not exist then. */
export interface KeyState {
  readonly key: ResourceKey;
  readonly stored: Stored<Resource> | undefined;
}

/**
 * `projection` with each of `resources` as given, at `revision`: the state at an earlier
 * revision R is the current one with every key written since R put back as it was at R
 * (`ResourceStore.projectionAt`). Meshes are put first so what lives in them finds them, and
 * deleted last, after their members, as the log orders a mesh's delete. Pure: meshes no key
 * touches keep their objects, which the generator memoises on.
 */
export function withResources(projection: Projection, revision: Seq, resources: Iterable<KeyState>): Projection {
  const batch = new Batch(projection);
  const all = [...resources];
  for (const { stored } of all) if (stored?.resource.type === 'Mesh') batch.putMesh(stored as Stored<Mesh>);
  for (const { stored } of all) {
    const resource = stored?.resource;
    if (resource === undefined || resource.type === 'Mesh') continue;
    if (resource.type === 'Dataplane') batch.putDataplane(stored as Stored<Dataplane>);
    else if (resource.type === 'DataplaneTls') batch.putMember('tls', stored as Stored<DataplaneTls>);
    else if (isPolicy(resource)) batch.putPolicy(stored as Stored<Policy>);
    else batch.putCredential(stored as Stored<Credential>);
  }
  for (const { key, stored } of all) {
    if (stored !== undefined || key.type === 'Mesh') continue;
    if (key.type === 'Dataplane') batch.deleteDataplane(key.mesh, key.name);
    else if (key.type === 'DataplaneTls') batch.deleteMember('tls', key.mesh, key.name);
    else if (isPolicyType(key.type)) batch.deletePolicy(key.mesh, policyId(key.type, key.name));
    else batch.deleteCredential(key);
  }
  for (const { key, stored } of all) if (stored === undefined && key.type === 'Mesh') batch.deleteMesh(key.name);
  return batch.finish(revision, undefined);
}

/** The resource a projection holds under `key`, or undefined. */
export function storedIn(projection: Projection, key: ResourceKey): Stored<Resource> | undefined {
  if (key.type === 'Mesh') return projection.meshes.get(key.name)?.mesh;
  if (key.type === 'Dataplane') return projection.meshes.get(key.mesh)?.dataplanes.get(key.name);
  if (key.type === 'DataplaneTls') return projection.meshes.get(key.mesh)?.tls.get(key.name);
  if (isPolicyType(key.type)) return projection.meshes.get(key.mesh)?.policies?.get(policyId(key.type, key.name));
  return projection.credentials.get(keyIdOf(key));
}

/** What the store holds of a resource, as of the event that wrote it. */
export function storedOf<T extends Resource>(resource: Valid<T>, event: ResourceEvent): Stored<T> {
  return { resource, version: event.version, seq: event.seq, updatedAt: event.at };
}

interface WritableMeshState {
  mesh: Stored<Mesh>;
  dataplanes: Map<string, Stored<Dataplane>>;
  authorities: Map<string, Stored<CertificateAuthority>>;
  tls: Map<string, Stored<DataplaneTls>>;
  policies?: Map<string, Stored<Policy>>;
}

/** The maps of a mesh's members other than its dataplanes, each copied on its first change. */
type MemberMaps = Pick<MeshState, 'authorities' | 'tls'>;
type Members = keyof MemberMaps;
interface MemberOf {
  readonly authorities: Stored<CertificateAuthority>;
  readonly tls: Stored<DataplaneTls>;
}

/**
 * A mesh the batch has looked at. `origin` is its state before the batch (none for a new
 * mesh); its dataplanes are `shared` with that state until the batch changes one, then `copied`;
 * so are its other members' maps, in `members` once changed.
 */
interface Draft {
  readonly origin: MeshState | undefined;
  mesh: Stored<Mesh>;
  readonly shared: ReadonlyMap<string, Stored<Dataplane>>;
  copied: Map<string, Stored<Dataplane>> | undefined;
  readonly sharedPolicies: ReadonlyMap<string, Stored<Policy>>;
  copiedPolicies: Map<string, Stored<Policy>> | undefined;
  readonly members: { authorities?: Map<string, Stored<CertificateAuthority>>; tls?: Map<string, Stored<DataplaneTls>> };
}

const NO_MEMBERS: MemberMaps = Object.freeze({ authorities: new Map(), tls: new Map() });
const NO_POLICIES: ReadonlyMap<string, Stored<Policy>> = new Map();

/** The copy-on-write state of one `applyEvents` call. */
class Batch {
  readonly #base: Projection;
  /** A copy of the base's meshes, made on the first change. */
  #meshes: Map<string, MeshState> | undefined;
  readonly #drafts = new Map<string, Draft>();
  /** A copy of the base's credentials, made on the first change. */
  #credentials: Map<string, Stored<Credential>> | undefined;

  constructor(base: Projection) {
    this.#base = base;
  }

  putMesh(mesh: Stored<Mesh>): void {
    const draft = this.#draft(mesh.resource.name);
    if (draft === undefined) {
      this.#drafts.set(mesh.resource.name, { origin: undefined, mesh, shared: new Map(), copied: undefined, sharedPolicies: NO_POLICIES, copiedPolicies: undefined, members: {} });
    }
    else draft.mesh = mesh;
  }

  deleteMesh(name: string): void {
    this.#drafts.delete(name);
    if ((this.#meshes ?? this.#base.meshes).has(name)) this.#writableMeshes().delete(name);
    // The log deletes a mesh's keys before it (write-plan.ts); a checkpoint's fold must agree.
    for (const [id, stored] of this.#credentials ?? this.#base.credentials) {
      if ('mesh' in stored.resource && stored.resource.mesh === name) this.#writableCredentials().delete(id);
    }
  }

  putCredential(stored: Stored<Credential>): void {
    const { resource } = stored;
    if (isMeshScoped(resource.type) && 'mesh' in resource && this.#draft(resource.mesh) === undefined) return;
    this.#writableCredentials().set(keyIdOf(keyOf(resource)), stored);
    // The generator reads a mesh's CAs (its trust bundle) from the mesh's state, which changes with them.
    if (resource.type === 'CertificateAuthority') this.putMember('authorities', stored as Stored<CertificateAuthority>);
  }

  deleteCredential(key: ResourceKey): void {
    const id = keyIdOf(key);
    if ((this.#credentials ?? this.#base.credentials).has(id)) this.#writableCredentials().delete(id);
    if (key.type === 'CertificateAuthority') this.deleteMember('authorities', key.mesh, key.name);
  }

  putPolicy(policy: Stored<Policy>): void {
    const draft = this.#draft(policy.resource.mesh);
    if (draft !== undefined) writablePolicies(draft).set(policyId(policy.resource.type, policy.resource.name), policy);
  }

  deletePolicy(mesh: string, id: string): void {
    const draft = this.#draft(mesh);
    if (draft !== undefined && (draft.copiedPolicies ?? draft.sharedPolicies).has(id)) writablePolicies(draft).delete(id);
  }

  putMember<M extends Members>(members: M, stored: MemberOf[M]): void {
    const { resource } = stored;
    const draft = this.#draft(resource.mesh);
    if (draft !== undefined) writableMembers(draft, members).set(resource.name, stored);
  }

  deleteMember(members: Members, mesh: string, name: string): void {
    const draft = this.#draft(mesh);
    if (draft !== undefined && membersOf(draft, members).has(name)) writableMembers(draft, members).delete(name);
  }

  putDataplane(dataplane: Stored<Dataplane>): void {
    const draft = this.#draft(dataplane.resource.mesh);
    if (draft !== undefined) writableDataplanes(draft).set(dataplane.resource.name, dataplane);
  }

  deleteDataplane(mesh: string, name: string): void {
    const draft = this.#draft(mesh);
    if (draft !== undefined && (draft.copied ?? draft.shared).has(name)) writableDataplanes(draft).delete(name);
  }

  finish(revision: Seq, at: string | undefined): Projection {
    for (const [name, draft] of this.#drafts) {
      const { members } = draft;
      // A mesh the batch only looked at keeps its object: consumers memoise on identity.
      const unchanged = draft.copied === undefined && draft.copiedPolicies === undefined && members.authorities === undefined && members.tls === undefined;
      if (unchanged && draft.mesh === draft.origin?.mesh) continue;
      const policies = draft.copiedPolicies ?? draft.sharedPolicies;
      this.#writableMeshes().set(name, {
        mesh: draft.mesh,
        dataplanes: draft.copied ?? draft.shared,
        authorities: membersOf(draft, 'authorities'),
        tls: membersOf(draft, 'tls'),
        ...(policies.size > 0 && { policies }),
      });
    }
    return {
      revision,
      ...(at !== undefined && { at }),
      meshes: this.#meshes ?? this.#base.meshes,
      credentials: this.#credentials ?? this.#base.credentials,
    };
  }

  /** The mesh's draft; undefined when the mesh does not exist at this point of the batch. */
  #draft(name: string): Draft | undefined {
    let draft = this.#drafts.get(name);
    if (draft === undefined) {
      const origin = (this.#meshes ?? this.#base.meshes).get(name);
      if (origin === undefined) return undefined;
      draft = { origin, mesh: origin.mesh, shared: origin.dataplanes, copied: undefined, sharedPolicies: origin.policies ?? NO_POLICIES, copiedPolicies: undefined, members: {} };
      this.#drafts.set(name, draft);
    }
    return draft;
  }

  #writableCredentials(): Map<string, Stored<Credential>> {
    return (this.#credentials ??= new Map(this.#base.credentials));
  }

  #writableMeshes(): Map<string, MeshState> {
    return (this.#meshes ??= new Map(this.#base.meshes));
  }
}

function writableDataplanes(draft: Draft): Map<string, Stored<Dataplane>> {
  return (draft.copied ??= new Map(draft.shared));
}

function membersOf<M extends Members>(draft: Draft, members: M): MemberMaps[M] {
  return (draft.members[members] ?? (draft.origin ?? NO_MEMBERS)[members]) as MemberMaps[M];
}

function writableMembers<M extends Members>(draft: Draft, members: M): Map<string, MemberOf[M]> {
  return (draft.members[members] ??= new Map(membersOf(draft, members) as ReadonlyMap<string, never>)) as Map<string, MemberOf[M]>;
}

function writablePolicies(draft: Draft): Map<string, Stored<Policy>> {
  return (draft.copiedPolicies ??= new Map(draft.sharedPolicies));
}

function isPolicy(resource: Resource): resource is Valid<Policy> {
  return isPolicyType(resource.type);
}
