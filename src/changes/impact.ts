import { generate, nodeIdOf, type GenerationInput, type MeshResources, type NodeCertificate } from '../mesh/index.js';
import type { EncodedResource } from '../xds/index.js';
import { heldResources, type Held } from './held-resources.js';
import type { FleetFacts } from './node-facts.js';
import { previewIdentity } from './preview-identity.js';
import { NOTHING_HELD, typeImpacts, type TypeImpacts } from './node-impact.js';

/** What a change does to one node. */
export interface NodeImpact {
  readonly node: string;
  /** Its Dataplane: `created`, `deleted` (its stream is ended, nothing pushed), or `kept` (changed, or its mesh was). */
  readonly dataplane: 'created' | 'deleted' | 'kept';
  /** Instances holding its stream now; none when it is not connected anywhere. */
  readonly connectedTo: readonly string[];
  /** Per short type name, what it would be sent anew and stop being sent; only the types that change. */
  readonly types: TypeImpacts;
  /** Why its configuration could not be generated after the change: it keeps what it holds, nothing is pushed (I1). */
  readonly error?: { readonly code: string; readonly message: string };
}

/** What a change does to the fleet. */
export interface Impact {
  /** The nodes whose configuration changes, sorted by node id. */
  readonly nodes: readonly NodeImpact[];
  /** Nodes (Dataplanes before or after) the change leaves as they were. */
  readonly unchanged: number;
  /** Each resource the impacts name, by version, old and new, to render them. */
  readonly resources: ReadonlyMap<string, EncodedResource>;
}

type Generated = { readonly held: Held } | { readonly error: { readonly code: string; readonly message: string } };

/** A node a change may affect: its Dataplane's mesh changed. */
export interface Candidate {
  readonly node: string;
  /** Whether its Dataplane exists before the change, and after. */
  readonly had: boolean;
  readonly has: boolean;
}

/**
 * What going from `before` to `after` does to every node, with the generator the sessions use
 * (src/mesh `generate`), so a preview cannot disagree with what would be pushed. Only meshes
 * whose state changed are looked at: a projection gives an unchanged mesh the same object. A
 * node holds what its subscriptions select (`facts`), or what a wildcard Envoy would.
 */
export function impactOf(before: GenerationInput, after: GenerationInput, facts: FleetFacts): Impact {
  const collector = new ImpactCollector(before, after, facts);
  for (const candidate of collector.candidates) collector.add(candidate);
  return collector.impact();
}

/**
 * `impactOf` one node at a time, for a caller that spreads the work over turns of the event
 * loop (10,000 nodes' generation is a second of CPU that must not hold the sessions up).
 */
export class ImpactCollector {
  /** The nodes of the meshes that changed, in no particular order. */
  readonly candidates: readonly Candidate[];
  readonly #before: GenerationInput;
  readonly #after: GenerationInput;
  readonly #facts: FleetFacts;
  readonly #nodes: NodeImpact[] = [];
  readonly #resources = new Map<string, EncodedResource>();
  #unchanged = 0;

  constructor(before: GenerationInput, after: GenerationInput, facts: FleetFacts) {
    this.#before = before;
    this.#after = after;
    this.#facts = facts;
    const candidates: Candidate[] = [];
    for (const mesh of new Set([...before.meshes.keys(), ...after.meshes.keys()])) {
      const was = before.meshes.get(mesh);
      const is = after.meshes.get(mesh);
      if (was === is) {
        this.#unchanged += is?.dataplanes.size ?? 0;
        continue;
      }
      for (const name of dataplanesOf(was, is)) {
        candidates.push({ node: nodeIdOf(mesh, name), had: was?.dataplanes.has(name) === true, has: is?.dataplanes.has(name) === true });
      }
    }
    this.candidates = candidates;
  }

  /** Works out one candidate's impact. */
  add(candidate: Candidate): void {
    const impact = nodeImpact(candidate, this.#before, this.#after, this.#facts, this.#resources);
    if (impact === undefined) this.#unchanged++;
    else this.#nodes.push(impact);
  }

  /** The impact of the candidates added so far. */
  impact(): Impact {
    return { nodes: [...this.#nodes].sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0)), unchanged: this.#unchanged, resources: this.#resources };
  }
}

function nodeImpact(
  { node, had, has }: Candidate,
  before: GenerationInput,
  after: GenerationInput,
  facts: FleetFacts,
  resources: Map<string, EncodedResource>,
): NodeImpact | undefined {
  const known = facts.node(node);
  const connectedTo = known?.connectedTo ?? [];
  if (!has) return { node, dataplane: 'deleted', connectedTo, types: {} };
  const certificate = facts.certificate(node);
  const was: Generated = had ? generated(node, before, known?.subscriptions, certificate) : { held: NOTHING_HELD };
  const is = generated(node, after, known?.subscriptions, certificate);
  const dataplane = had ? 'kept' : 'created';
  if ('error' in is) {
    // A node whose generation already failed the same way is left as it was.
    if ('error' in was && was.error.code === is.error.code) return undefined;
    return { node, dataplane, connectedTo, types: {}, error: is.error };
  }
  const types = typeImpacts('held' in was ? was.held : NOTHING_HELD, is.held, resources);
  if (had && Object.keys(types).length === 0) return undefined;
  return { node, dataplane, connectedTo, types };
}

function generated(node: string, input: GenerationInput, subscriptions: Parameters<typeof heldResources>[1], certificate: NodeCertificate | undefined): Generated {
  const result = generate(node, input, previewIdentity(node, input, certificate));
  if (!result.ok) return { error: { code: result.error.code, message: result.error.message } };
  return { held: heldResources(result.snapshot, subscriptions) };
}

function dataplanesOf(was: MeshResources | undefined, is: MeshResources | undefined): Set<string> {
  return new Set([...(was?.dataplanes.keys() ?? []), ...(is?.dataplanes.keys() ?? [])]);
}
