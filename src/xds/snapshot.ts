import { ChanceryError } from '../common/index.js';
import { contentHash } from './content-hash.js';
import type { EncodedResource } from './encode.js';
import { ResourceSet } from './resource-set.js';
import { CLUSTER, ENDPOINT, LISTENER, PUSH_ORDER, ROUTE, SECRET, type TypeUrl } from './type-urls.js';

/** The brand only this module can write: a Snapshot made anywhere else does not type-check. */
declare const sealed: unique symbol;

/**
 * What a node can be sent of one type. `wildcard` is the node's full set for a wildcard
 * subscriber (Envoy); `named` are shared sets a subscriber can name resources from (proxyless
 * gRPC, and Envoy's EDS and RDS requests).
 */
export interface TypeSnapshot {
  /** Content hash of everything in this type for this node. */
  readonly version: string;
  readonly wildcard: ResourceSet;
  readonly named: readonly ResourceSet[];
  /** Distinct resources of this type the node can be sent. */
  readonly size: number;
  get(name: string): EncodedResource | undefined;
}

/**
 * A node's configuration at a store revision. Only `sealSnapshot` constructs one, and only
 * the generator calls it (I1): no code path can make a placeholder. Every type URL is a key,
 * so a type left out cannot be mistaken for an empty one.
 */
export interface Snapshot {
  readonly [sealed]: true;
  readonly node: string;
  readonly revision: number;
  readonly types: Readonly<Record<TypeUrl, TypeSnapshot>>;
  /** Distinct resources across all types. */
  readonly resourceCount: number;
}

export interface SnapshotParts {
  readonly node: string;
  readonly revision: number;
  readonly types: Readonly<Record<TypeUrl, { wildcard: ResourceSet; named: readonly ResourceSet[] }>>;
}

export class EmptyConfigurationError extends ChanceryError {
  readonly code = 'CHANCERY_XDS_EMPTY_CONFIGURATION';
  constructor(
    readonly node: string,
    readonly revision: number,
  ) {
    super(`configuration for ${node} at revision ${revision} has no resources at all; nothing will be pushed (I1)`);
  }
}

export class MissingReferenceError extends ChanceryError {
  readonly code = 'CHANCERY_XDS_MISSING_REFERENCE';
  constructor(
    readonly node: string,
    readonly revision: number,
    readonly typeUrl: TypeUrl,
    readonly missing: readonly string[],
  ) {
    super(`configuration for ${node} at revision ${revision} references missing ${typeUrl} resources: ${missing.join(', ')} (${typeUrl === SECRET ? 'I8' : 'I5'})`);
  }
}

export type SealResult =
  | { readonly ok: true; readonly snapshot: Snapshot }
  | { readonly ok: false; readonly error: EmptyConfigurationError | MissingReferenceError };

/**
 * The only class whose instances are Snapshots. A private field is what `assertSealed` checks:
 * a copy of a snapshot, or an object given the brand with a cast, does not have it.
 */
class SealedSnapshot implements Snapshot {
  declare readonly [sealed]: true;
  readonly #sealed = true;

  constructor(
    readonly node: string,
    readonly revision: number,
    readonly types: Readonly<Record<TypeUrl, TypeSnapshot>>,
    readonly resourceCount: number,
  ) {
    Object.freeze(this);
  }

  static sealed(value: object): boolean {
    return #sealed in value;
  }
}

/** Which type a resource's `references` point into. */
const REFERENCES: readonly (readonly [from: TypeUrl, to: TypeUrl])[] = [
  [LISTENER, ROUTE],
  [CLUSTER, ENDPOINT],
];

// A shared set is checked once against the shared sets it points into, not once per node.
const checkedAgainst = new WeakMap<ResourceSet, readonly ResourceSet[]>();

// A node's own set is checked again only when the names it may point to change: a change to
// an endpoint set's contents (every change of a fleet's endpoints) leaves its names as they were.
const ownCheckedAgainst = new WeakMap<ResourceSet, string>();
const namesOfTarget = new WeakMap<TypeSnapshot, string>();

/** A digest of every name `target` holds, computed once per target; targets are shared by the nodes of a mesh. */
function namesOf(target: TypeSnapshot): string {
  let names = namesOfTarget.get(target);
  if (names === undefined) {
    const all = [target.wildcard, ...target.named].flatMap((set) => set.list.map((resource) => resource.name));
    names = contentHash([...new Set(all)].sort().join('\n'));
    namesOfTarget.set(target, names);
  }
  return names;
}

/**
 * Seals a node's resources into a Snapshot, refusing a configuration with no resources at
 * all (I1), one whose listeners or clusters name a route or endpoint set it lacks (I5), and one
 * whose listeners or clusters name a Secret it lacks (I8: Envoy would keep them warming, or fail
 * their connections with `*_context_secrets_not_ready`, istio#31245).
 */
export function sealSnapshot(parts: SnapshotParts): SealResult {
  const types = {} as Record<TypeUrl, TypeSnapshot>;
  let resourceCount = 0;
  for (const typeUrl of PUSH_ORDER) {
    const { wildcard, named } = parts.types[typeUrl];
    const type = typeSnapshot(typeUrl, wildcard, named);
    types[typeUrl] = type;
    resourceCount += type.size;
  }
  if (resourceCount === 0) return { ok: false, error: new EmptyConfigurationError(parts.node, parts.revision) };

  for (const [from, to] of REFERENCES) {
    const target = types[to];
    let missing: Set<string> | undefined;
    const own = types[from].wildcard;
    if (own.size > 0 && ownCheckedAgainst.get(own) !== namesOf(target)) {
      for (const resource of own.list) missing = collectMissing(resource, target, missing);
      if (missing === undefined) ownCheckedAgainst.set(own, namesOf(target));
    }
    for (const set of types[from].named) {
      if (sameSets(checkedAgainst.get(set), target.named)) continue;
      let withinShared = true;
      for (const resource of set.list) {
        missing = collectMissing(resource, target, missing);
        withinShared &&= resource.references.every((name) => target.named.some((shared) => shared.get(name)));
      }
      if (withinShared) checkedAgainst.set(set, target.named);
    }
    if (missing !== undefined) {
      return { ok: false, error: new MissingReferenceError(parts.node, parts.revision, to, [...missing].sort()) };
    }
  }
  const secrets = missingSecrets(types);
  if (secrets !== undefined) return { ok: false, error: new MissingReferenceError(parts.node, parts.revision, SECRET, [...secrets].sort()) };
  return { ok: true, snapshot: new SealedSnapshot(parts.node, parts.revision, types, resourceCount) };
}

/** A value that claims to be a Snapshot but was not sealed here: a bug that would push what no generator made. */
export class ForgedSnapshotError extends ChanceryError {
  readonly code = 'CHANCERY_XDS_FORGED_SNAPSHOT';
  constructor(readonly node: unknown) {
    super(`a Snapshot for node ${String(node)} was not made by sealSnapshot; nothing is pushed from it (I1)`);
  }
}

/** Throws unless `snapshot` came from `sealSnapshot`: checked before anything is pushed from it (I1). */
export function assertSealed(snapshot: Snapshot): void {
  if (!SealedSnapshot.sealed(snapshot)) throw new ForgedSnapshotError((snapshot as { node?: unknown }).node);
}

/**
 * The Secret names the snapshot's listeners and clusters use that its Secrets lack (I8). A node's
 * Secrets are its own, so each set is checked for every node; but what a set names is gathered
 * once per set (`secretsNamedBy`): a mesh's shared sets (every gRPC server listener of the mesh)
 * are not walked again for each node.
 */
function missingSecrets(types: Readonly<Record<TypeUrl, TypeSnapshot>>): Set<string> | undefined {
  const target = types[SECRET];
  let missing: Set<string> | undefined;
  for (const from of SECRET_USERS) {
    const { wildcard, named } = types[from];
    missing = secretsMissing(wildcard, target, missing);
    for (const set of named) missing = secretsMissing(set, target, missing);
  }
  return missing;
}

const SECRET_USERS = [LISTENER, CLUSTER] as const;

/** `missing` with the Secret names `set` uses that `target` lacks; made only when one is missing. */
function secretsMissing(set: ResourceSet, target: TypeSnapshot, missing: Set<string> | undefined): Set<string> | undefined {
  const names = secretsNamedBy(set);
  // Called for every set of every node at every change, and most name none.
  for (let i = 0; i < names.length; i++) if (!target.get(names[i]!)) (missing ??= new Set()).add(names[i]!);
  return missing;
}

const namedSecrets = new WeakMap<ResourceSet, readonly string[]>();
const NO_SECRETS: readonly string[] = Object.freeze([]);

/** Every Secret name the resources of `set` use, distinct; sets are immutable, so once per set. */
function secretsNamedBy(set: ResourceSet): readonly string[] {
  let names = namedSecrets.get(set);
  if (names === undefined) {
    const distinct = new Set<string>();
    for (const resource of set.list) for (const name of resource.secrets) distinct.add(name);
    names = distinct.size === 0 ? NO_SECRETS : Object.freeze([...distinct]);
    namedSecrets.set(set, names);
  }
  return names;
}

/** `missing` with the names `resource` references that `target` lacks; made only when one is missing. */
function collectMissing(resource: EncodedResource, target: TypeSnapshot, missing: Set<string> | undefined): Set<string> | undefined {
  for (const name of resource.references) if (!target.get(name)) (missing ??= new Set()).add(name);
  return missing;
}

/** Called for every type of every node at every change: a loop, where `every` would make a closure per call. */
function sameSets(a: readonly ResourceSet[] | undefined, b: readonly ResourceSet[]): boolean {
  if (a === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// Nodes whose own resources are unchanged, or who have none, share one TypeSnapshot per
// combination of sets: sealing 10,000 snapshots after a change hashes each combination once.
// One cache per type: `ResourceSet.empty` is the wildcard set of EDS and RDS alike.
const typeSnapshots = new Map(PUSH_ORDER.map((typeUrl) => [typeUrl, new WeakMap<ResourceSet, SealedType>()]));

function typeSnapshot(typeUrl: TypeUrl, wildcard: ResourceSet, named: readonly ResourceSet[]): TypeSnapshot {
  const cache = typeSnapshots.get(typeUrl)!;
  const cached = cache.get(wildcard);
  if (cached && sameSets(cached.named, named)) return cached;
  const type = new SealedType(wildcard, named);
  cache.set(wildcard, type);
  return type;
}

/**
 * A TypeSnapshot. A class: a node's own listeners and clusters make one per node, and `get` as
 * a closure cost each its function and context (and under tsx, which keeps every named
 * function's name, a property array of 256 bytes as well: 0.5 KB a node).
 */
class SealedType implements TypeSnapshot {
  readonly version: string;
  readonly named: readonly ResourceSet[];
  readonly size: number;

  constructor(
    readonly wildcard: ResourceSet,
    named: readonly ResourceSet[],
  ) {
    // The mesh's shared lists are frozen once for all its nodes; any other is copied.
    this.named = Object.isFrozen(named) ? named : Object.freeze([...named]);
    this.version = named.length === 0 ? wildcard.version : contentHash(wildcard.version, ...named.map((set) => `\n${set.version}`));
    // A resource can be both the node's own and shared (an Envoy outbound's EDS cluster): count
    // it once. Shared sets hold distinct names, so only the node's own set needs looking at.
    let size = wildcard.size;
    for (const set of named) size += set.size;
    for (const resource of wildcard.list) if (named.some((set) => set.get(resource.name))) size--;
    this.size = size;
    Object.freeze(this);
  }

  get(name: string): EncodedResource | undefined {
    const own = this.wildcard.get(name);
    if (own) return own;
    for (const set of this.named) {
      const found = set.get(name);
      if (found) return found;
    }
    return undefined;
  }
}
