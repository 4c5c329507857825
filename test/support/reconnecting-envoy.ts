import type { DecodedDeltaResponse, DecodedResponse } from '../../src/xds/decode.js';
import type { Protocol } from '../../src/xds/index.js';
import { CLUSTER, ENDPOINT, FULL_STATE, LISTENER } from '../../src/xds/type-urls.js';
import { AdsStream, DeltaStream } from './ads-client.js';

/** One stream of a `ReconnectingEnvoy`, with every response it got and how it ended. */
export interface EnvoyStream {
  readonly stream: AdsStream | DeltaStream;
  /** The `control_plane.identifier` of its responses: the instance that served it. */
  servedBy(): string | undefined;
}

/** One response as the Envoy applied it, whichever protocol carried it. */
export interface EnvoyUpdate {
  readonly typeUrl: string;
  /** The instance that sent it (`control_plane.identifier`). */
  readonly servedBy: string;
  /** The names of the resources it carried. */
  readonly names: readonly string[];
  /** Delta's `removed_resources`; always empty over SotW, where absence is the removal. */
  readonly removed: readonly string[];
  /** What the Envoy held of the type once it applied the response, by name, sorted. */
  readonly holds: readonly string[];
}

/**
 * Behaves as Envoy does over ADS behind a load balancer, in either protocol: wildcard CDS
 * carrying the node, EDS for `edsClusters`, wildcard LDS, every response ACKed; when the stream
 * ends, it reconnects at once on a new connection, saying what it holds (SotW: the version of
 * each type; Delta: `initial_resource_versions`, every name with its version), for as long as
 * it runs. Tests read every update of every stream to check what each instance sent.
 */
export class ReconnectingEnvoy {
  readonly streams: EnvoyStream[] = [];
  /** Every response of every stream, in order, as applied. */
  readonly updates: EnvoyUpdate[] = [];
  /** SotW: the version held of each type. */
  readonly #versions = new Map<string, string>();
  /** Per type, what the Envoy holds: name → version (SotW: the version of the type's response). */
  readonly #held = new Map<string, Map<string, string>>();
  #running = true;
  readonly #done: Promise<void>;

  constructor(
    readonly address: string,
    readonly node: string,
    readonly edsClusters: readonly string[],
    readonly protocol: Protocol = 'sotw',
  ) {
    this.#done = this.#run();
  }

  /** Stops reconnecting, closes the current stream, and resolves once the loop has ended. */
  async stop(): Promise<void> {
    this.#running = false;
    this.streams.at(-1)?.stream.close();
    await this.#done;
  }

  async #run(): Promise<void> {
    while (this.#running) {
      const stream = this.protocol === 'delta' ? DeltaStream.open(this.address) : AdsStream.open(this.address);
      this.streams.push({ stream, servedBy: () => stream.responses[0]?.controlPlane });
      await (stream instanceof DeltaStream ? this.#serveDelta(stream) : this.#serveSotw(stream));
      stream.close();
    }
  }

  /** Speaks SotW on one stream until it ends (or the Envoy stops, which closes it). */
  async #serveSotw(stream: AdsStream): Promise<void> {
    stream.send({ typeUrl: CLUSTER, nodeId: this.node, versionInfo: this.#versions.get(CLUSTER) ?? '' });
    // A reconnecting Envoy asks for everything it holds at once: an instance that finds the
    // CDS version it holds current need not answer CDS (xDS), so waiting for one could hang.
    let subscribed = this.#versions.has(CLUSTER);
    const subscribe = () => {
      stream.send({ typeUrl: ENDPOINT, resourceNames: [...this.edsClusters], versionInfo: this.#versions.get(ENDPOINT) ?? '' });
      stream.send({ typeUrl: LISTENER, versionInfo: this.#versions.get(LISTENER) ?? '' });
    };
    if (subscribed) subscribe();
    await this.#answer(stream, (response: DecodedResponse) => {
      this.#versions.set(response.typeUrl, response.versionInfo);
      // State of the world: an LDS or CDS response is all the Envoy holds of the type; an EDS one
      // replaces the assignments it carries, the others it asks for kept (xDS: not full-state).
      const names = response.resources.map((resource) => String(resource['name'] ?? resource['cluster_name']));
      const kept = (FULL_STATE as ReadonlySet<string>).has(response.typeUrl) ? [] : [...(this.#held.get(response.typeUrl) ?? [])].filter(([name]) => this.edsClusters.includes(name));
      const holds = new Map([...kept, ...names.map((name) => [name, response.versionInfo] as const)]);
      this.#apply(response.typeUrl, response.controlPlane, holds, names, []);
      stream.ack(response, response.typeUrl === ENDPOINT ? this.edsClusters : []);
      if (response.typeUrl === CLUSTER && !subscribed) {
        subscribed = true;
        subscribe();
      }
    });
  }

  /**
   * Speaks Delta on one stream until it ends. As Envoy, it names what it holds on the first
   * request of each type; CDS and LDS stay the legacy wildcard (both lists empty).
   */
  async #serveDelta(stream: DeltaStream): Promise<void> {
    const held = (typeUrl: string) => Object.fromEntries(this.#held.get(typeUrl) ?? []);
    stream.send({ typeUrl: CLUSTER, nodeId: this.node, initialVersions: held(CLUSTER) });
    stream.send({ typeUrl: ENDPOINT, subscribe: [...this.edsClusters], initialVersions: held(ENDPOINT) });
    stream.send({ typeUrl: LISTENER, initialVersions: held(LISTENER) });
    await this.#answer(stream, (response: DecodedDeltaResponse) => {
      // Delta: the response changes what the Envoy holds, name by name (rule 7).
      const holds = new Map(this.#held.get(response.typeUrl));
      for (const { name, version } of response.resources) holds.set(name, version);
      for (const name of response.removed) holds.delete(name);
      this.#apply(response.typeUrl, response.controlPlane, holds, response.resources.map(({ name }) => name), response.removed);
      stream.ack(response);
    });
  }

  /** Hands every response of `stream` to `apply`, in order, until the stream ends. */
  async #answer<TResponse>(stream: { readonly responses: readonly TResponse[]; until: AdsStream['until'] }, apply: (response: TResponse) => void): Promise<void> {
    let answered = 0;
    for (;;) {
      try {
        await stream.until(() => stream.responses.length > answered, 'a response');
      } catch {
        return; // the stream ended
      }
      for (; answered < stream.responses.length; answered++) apply(stream.responses[answered]!);
    }
  }

  #apply(typeUrl: string, servedBy: string, holds: Map<string, string>, names: readonly string[], removed: readonly string[]): void {
    this.#held.set(typeUrl, holds);
    this.updates.push({ typeUrl, servedBy, names, removed, holds: [...holds.keys()].sort() });
  }
}
