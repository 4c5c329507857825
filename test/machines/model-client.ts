import { Client, credentials } from '@grpc/grpc-js';
import type { DecodedResponse } from '../../src/xds/index.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../src/xds/type-urls.js';
import { AdsStream } from '../support/ads-client.js';

/** The names of the EDS clusters among a CDS response's clusters: what Envoy asks EDS for. */
function edsClusters(clusters: DecodedResponse): string[] {
  return clusters.resources.filter((cluster) => cluster['type'] === 'EDS').map((cluster) => String(cluster['name'])).sort();
}

/** One stream of the client, with every nonce it answered (ACKed or NACKed). */
export class ModelStream {
  readonly answered = new Set<string>();
  /** Nonces of the responses that arrived on it. */
  readonly nonces: string[] = [];
  #edsNames: readonly string[] = [];

  constructor(
    readonly ads: AdsStream,
    readonly client: EnvoyLikeClient,
  ) {
    ads.onResponse((response) => this.#receive(response));
  }

  /** Sends what Envoy sends on a new stream: CDS with the node, EDS for the clusters it holds, LDS; with the versions it holds when `holding`. */
  open(node: string, holding: boolean): void {
    const version = (typeUrl: string) => (holding ? (this.client.held.get(typeUrl)?.versionInfo ?? '') : '');
    this.ads.send({ typeUrl: CLUSTER, nodeId: node, versionInfo: version(CLUSTER) });
    const clusters = holding ? this.client.held.get(CLUSTER) : undefined;
    this.#edsNames = clusters === undefined ? [] : edsClusters(clusters);
    if (this.#edsNames.length > 0) this.ads.send({ typeUrl: ENDPOINT, resourceNames: this.#edsNames, versionInfo: version(ENDPOINT) });
    this.ads.send({ typeUrl: LISTENER, versionInfo: version(LISTENER) });
  }

  /** NACKs the last response it got on this stream (of whatever type), keeping what it holds of that type. */
  nack(message: string): void {
    const last = this.ads.responses.at(-1);
    const typeUrl = last?.typeUrl ?? CLUSTER;
    const names = typeUrl === ENDPOINT ? this.#edsNames : [];
    const held = this.client.held.get(typeUrl);
    this.ads.send({ typeUrl, versionInfo: held?.versionInfo ?? '', responseNonce: last?.nonce ?? '', resourceNames: [...names], errorDetail: { code: 3, message } });
  }

  /** ACKs the last listeners again: a request that changes nothing. */
  ackAgain(): void {
    const last = [...this.ads.responses].reverse().find((response) => response.typeUrl === LISTENER);
    this.ads.send({ typeUrl: LISTENER, versionInfo: last?.versionInfo ?? '', responseNonce: last?.nonce ?? '' });
  }

  /** A listener request with no nonce and the same (wildcard) subscription: nothing is owed. */
  requestAgain(): void {
    this.ads.send({ typeUrl: LISTENER, versionInfo: this.client.held.get(LISTENER)?.versionInfo ?? '' });
  }

  /**
   * Subscribes RDS to `name`, which no route has: nothing is owed, but once the server shows the
   * name, it has handled every request sent on this stream before it.
   */
  barrier(name: string): void {
    this.ads.send({ typeUrl: ROUTE, resourceNames: [name] });
  }

  /** Every response is ACKed, as Envoy does; a change of clusters changes the EDS subscription too. */
  #receive(response: DecodedResponse): void {
    this.nonces.push(response.nonce);
    this.client.held.set(response.typeUrl, response);
    const names = response.typeUrl === ENDPOINT ? this.#edsNames : [];
    this.ads.send({ typeUrl: response.typeUrl, versionInfo: response.versionInfo, responseNonce: response.nonce, resourceNames: [...names] });
    this.answered.add(response.nonce);
    if (response.typeUrl !== CLUSTER) return;
    const wanted = edsClusters(response);
    if (wanted.join('\n') === this.#edsNames.join('\n')) return;
    this.#edsNames = wanted;
    const eds = [...this.ads.responses].reverse().find((candidate) => candidate.typeUrl === ENDPOINT);
    this.ads.send({ typeUrl: ENDPOINT, resourceNames: wanted, versionInfo: eds?.versionInfo ?? '', responseNonce: eds?.nonce ?? '' });
  }
}

/**
 * One node's xDS client as Envoy behaves over ADS: it keeps the last response of each type it
 * accepted across streams, ACKs everything, and names what it holds when it reconnects.
 */
export class EnvoyLikeClient {
  /** The last response of each type it accepted, by type URL. */
  readonly held = new Map<string, DecodedResponse>();
  readonly streams: ModelStream[] = [];
  readonly #connections = new Set<Client>();

  constructor(
    readonly address: string,
    readonly node: string,
  ) {}

  get current(): ModelStream | undefined {
    return this.streams.at(-1);
  }

  /** Forgets everything it held, as a restarted Envoy does. */
  forget(): void {
    this.held.clear();
  }

  /** Opens a stream: on a new connection, or on the current stream's, so two streams of the node share one. */
  open(holding: boolean, connection: 'new' | 'shared' = 'new'): ModelStream {
    const shared = connection === 'shared' ? this.current?.ads.client : undefined;
    const client = shared ?? new Client(this.address, credentials.createInsecure());
    this.#connections.add(client);
    const stream = new ModelStream(new AdsStream(client), this);
    this.streams.push(stream);
    stream.open(this.node, holding);
    return stream;
  }

  /** Cancels the current stream only (its connection may carry another). */
  closeCurrent(): void {
    this.current?.ads.cancel();
  }

  /** Closes every stream and connection. */
  close(): void {
    for (const stream of this.streams) stream.ads.cancel();
    for (const client of this.#connections) client.close();
  }
}
