import type { DecodedResponse } from '../../src/xds/decode.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import { AdsStream } from './ads-client.js';

/** One stream of a `ReconnectingEnvoy`, with every response it got and how it ended. */
export interface EnvoyStream {
  readonly stream: AdsStream;
  /** The `control_plane.identifier` of its responses: the instance that served it. */
  servedBy(): string | undefined;
}

/**
 * Behaves as Envoy does over ADS behind a load balancer: wildcard CDS carrying the node, EDS
 * for `edsClusters`, wildcard LDS, every response ACKed; when the stream ends, it reconnects
 * at once on a new connection, sending the versions it holds, for as long as it runs. Tests
 * read every response of every stream to check what each instance sent.
 */
export class ReconnectingEnvoy {
  readonly streams: EnvoyStream[] = [];
  readonly #held = new Map<string, string>();
  #running = true;
  readonly #done: Promise<void>;

  constructor(
    readonly address: string,
    readonly node: string,
    readonly edsClusters: readonly string[],
  ) {
    this.#done = this.#run();
  }

  /** Every response of every stream so far, in order. */
  get responses(): DecodedResponse[] {
    return this.streams.flatMap(({ stream }) => stream.responses);
  }

  /** Stops reconnecting, closes the current stream, and resolves once the loop has ended. */
  async stop(): Promise<void> {
    this.#running = false;
    this.streams.at(-1)?.stream.close();
    await this.#done;
  }

  async #run(): Promise<void> {
    while (this.#running) {
      const stream = AdsStream.open(this.address);
      this.streams.push({ stream, servedBy: () => stream.responses[0]?.controlPlane });
      await this.#serve(stream);
      stream.close();
    }
  }

  /** Speaks on one stream until it ends (or the Envoy stops, which closes it). */
  async #serve(stream: AdsStream): Promise<void> {
    stream.send({ typeUrl: CLUSTER, nodeId: this.node, versionInfo: this.#held.get(CLUSTER) ?? '' });
    // A reconnecting Envoy asks for everything it holds at once: an instance that finds the
    // CDS version it holds current need not answer CDS (xDS), so waiting for one could hang.
    let subscribed = this.#held.has(CLUSTER);
    if (subscribed) this.#subscribe(stream);
    let answered = 0;
    for (;;) {
      try {
        await stream.until(() => stream.responses.length > answered, 'a response');
      } catch {
        return; // the stream ended
      }
      for (; answered < stream.responses.length; answered++) {
        const response = stream.responses[answered]!;
        this.#held.set(response.typeUrl, response.versionInfo);
        stream.ack(response, response.typeUrl === ENDPOINT ? this.edsClusters : []);
        if (response.typeUrl === CLUSTER && !subscribed) {
          subscribed = true;
          this.#subscribe(stream);
        }
      }
    }
  }

  #subscribe(stream: AdsStream): void {
    stream.send({ typeUrl: ENDPOINT, resourceNames: [...this.edsClusters], versionInfo: this.#held.get(ENDPOINT) ?? '' });
    stream.send({ typeUrl: LISTENER, versionInfo: this.#held.get(LISTENER) ?? '' });
  }
}
