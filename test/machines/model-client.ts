import { Client, credentials } from '@grpc/grpc-js';
import {
  decodeDeltaRequest,
  decodeRequest,
  encodeDeltaRequest,
  encodeRequest,
  type DecodedDeltaResponse,
  type DecodedResponse,
  type Protocol,
  type StreamRequest,
} from '../../src/xds/index.js';
import { CLUSTER, ENDPOINT, FULL_STATE, LISTENER, ROUTE, SECRET } from '../../src/xds/type-urls.js';
import { AdsStream, DeltaStream, type StreamEnd } from '../support/ads-client.js';

/** One stream of the model's client, as the replay drives and checks it. */
export interface ModelStream {
  /** Nonces it answered (ACKed or NACKed). */
  readonly answered: ReadonlySet<string>;
  /** Responses that arrived on it, the barriers' answers left out. */
  readonly count: number;
  /** The resources each LDS and CDS response named, and each Delta response removed, for the wire checks. */
  readonly sent: ReadonlyArray<{ readonly typeUrl: string; readonly names: readonly string[]; readonly removed: readonly string[] }>;
  /** The status the server ends it with; fails after `timeoutMs` naming `what` it waited for. */
  ending(what: string, timeoutMs: number): Promise<StreamEnd>;
  /**
   * What it would still send after a newer stream took over, as the server would read them: an
   * ACK of its last listeners, a NACK of its last clusters and a subscription to `LATE_ROUTE`.
   * Nonces count from 1 on every stream, so the current stream may well have been sent these.
   */
  lateWords(): StreamRequest[];
  /** NACKs the last response it got (of whatever type), keeping what it holds. */
  nack(message: string): void;
  /** ACKs the last listeners again: a request that changes nothing. */
  ackAgain(): void;
  /** A listener request that changes nothing: nothing is owed. */
  requestAgain(): void;
  /**
   * Subscribes RDS to `name`, which no route has; once the server shows the name, it has handled
   * every request sent on this stream before it.
   */
  barrier(name: string): void;
  cancel(): void;
}

/** One node's xDS client as Envoy behaves over ADS, in either protocol. */
export interface ModelClient {
  readonly protocol: Protocol;
  readonly streams: readonly ModelStream[];
  readonly current: ModelStream | undefined;
  /** What it holds of a type, each resource as proto3 JSON, sorted by name. */
  holds(typeUrl: string): readonly Record<string, unknown>[];
  /** Forgets everything it held, as a restarted Envoy does. */
  forget(): void;
  /** Opens a stream naming what it holds when `holding`: on a new connection, or on the current stream's. */
  open(holding: boolean, connection?: 'new' | 'shared'): ModelStream;
  close(): void;
}

export function modelClient(protocol: Protocol, address: string, node: string): ModelClient {
  return protocol === 'delta' ? new DeltaModelClient(address, node) : new SotwModelClient(address, node);
}

/** The route an earlier stream subscribes to in its late words: no other request names it. */
export const LATE_ROUTE = 'late-route-of-an-earlier-stream';
export const LATE_NACK = 'a late NACK from an earlier stream';

/** A request as the server reads it off the wire. */
function asRead(read: ReturnType<typeof decodeRequest>): StreamRequest {
  if (!read.ok) throw new Error(`the model client wrote a request the server cannot read: ${read.reason}`);
  return read.request;
}

const EDS = (cluster: Record<string, unknown>) => cluster['type'] === 'EDS';

/** The SDS Secrets a TLS context names (mesh mTLS): Envoy asks for them once a cluster or listener it holds names one. */
const SDS_NAMES: readonly string[] = ['mtls:identity', 'mtls:trust:default'];
const namesSecrets = (resource: Record<string, unknown>) => JSON.stringify(resource).includes('"sds_config"');
/** The Secrets the client should ask for, given what it holds of clusters and listeners. */
const secretsWanted = (holds: (typeUrl: string) => readonly Record<string, unknown>[]) =>
  [...holds(CLUSTER), ...holds(LISTENER)].some(namesSecrets) ? SDS_NAMES : [];
const nameOf = (resource: Record<string, unknown>) => String(resource['name'] ?? resource['cluster_name']);

/** What both clients share: the connections, the streams, what they hold, and opening a stream. */
abstract class Connections<TStream extends WireStream<{ readonly typeUrl: string; readonly nonce: string }> & ModelStream> implements Pick<ModelClient, 'streams' | 'current' | 'forget' | 'open' | 'close'> {
  readonly streams: TStream[] = [];
  readonly #connections = new Set<Client>();
  /** What it holds, by type URL. */
  abstract readonly held: Map<string, unknown>;

  constructor(
    readonly address: string,
    readonly node: string,
  ) {}

  get current(): TStream | undefined {
    return this.streams.at(-1);
  }

  forget(): void {
    this.held.clear();
  }

  open(holding: boolean, connection: 'new' | 'shared' = 'new'): ModelStream {
    const stream = this.stream(this.connection(connection));
    this.streams.push(stream);
    stream.open(this.node, holding);
    return stream;
  }

  /** A stream of this client's protocol on `client`'s connection. */
  protected abstract stream(client: Client): TStream;

  protected connection(kind: 'new' | 'shared'): Client {
    const client = (kind === 'shared' ? this.current?.client : undefined) ?? new Client(this.address, credentials.createInsecure());
    this.#connections.add(client);
    return client;
  }

  close(): void {
    for (const stream of this.streams) stream.cancel();
    for (const client of this.#connections) client.close();
  }
}

/** The raw stream under a model stream, in either protocol. */
interface RawStream<TResponse> {
  readonly client: Client;
  readonly responses: readonly TResponse[];
  onResponse(listener: (response: TResponse) => void): void;
  ending(what: string, timeoutMs: number): Promise<StreamEnd>;
  cancel(): void;
}

/** What both protocols' model streams share: the raw stream under them, what they answered, what they were sent. */
abstract class WireStream<TResponse extends { readonly typeUrl: string; readonly nonce: string }> implements Pick<ModelStream, 'answered' | 'count' | 'sent' | 'ending' | 'cancel'> {
  readonly answered = new Set<string>();
  readonly sent: Array<{ typeUrl: string; names: readonly string[]; removed: readonly string[] }> = [];
  /** The EDS names it subscribes to. */
  protected edsNames: readonly string[] = [];
  /** The SDS names it subscribes to (mesh mTLS). */
  protected sdsNames: readonly string[] = [];

  constructor(readonly raw: RawStream<TResponse>) {
    raw.onResponse((response) => this.receive(response));
  }

  get client(): Client {
    return this.raw.client;
  }

  get count(): number {
    return this.sent.length;
  }

  ending(what: string, timeoutMs: number): Promise<StreamEnd> {
    return this.raw.ending(what, timeoutMs);
  }

  cancel(): void {
    this.raw.cancel();
  }

  /** What Envoy sends on a new stream, naming what it holds when `holding`. */
  abstract open(node: string, holding: boolean): void;

  /** Answers a response as Envoy does. */
  protected abstract receive(response: TResponse): void;

  /** The last response of `typeUrl` on this stream. */
  protected last(typeUrl: string): TResponse | undefined {
    return [...this.raw.responses].reverse().find((response) => response.typeUrl === typeUrl);
  }
}

class SotwModelClient extends Connections<SotwModelStream> implements ModelClient {
  readonly protocol = 'sotw';
  /** The last response of each type it accepted, by type URL. */
  readonly held = new Map<string, DecodedResponse>();

  holds(typeUrl: string): readonly Record<string, unknown>[] {
    return this.held.get(typeUrl)?.resources ?? [];
  }

  protected stream(client: Client): SotwModelStream {
    return new SotwModelStream(new AdsStream(client), this);
  }
}

class SotwModelStream extends WireStream<DecodedResponse> implements ModelStream {
  constructor(
    readonly ads: AdsStream,
    readonly owner: SotwModelClient,
  ) {
    super(ads);
  }

  lateWords(): StreamRequest[] {
    const [listeners, clusters] = [this.last(LISTENER), this.last(CLUSTER)];
    return [
      { typeUrl: LISTENER, versionInfo: listeners?.versionInfo ?? '', responseNonce: listeners?.nonce ?? '1' },
      { typeUrl: CLUSTER, versionInfo: '', responseNonce: clusters?.nonce ?? '1', errorDetail: { code: 3, message: LATE_NACK } },
      { typeUrl: ROUTE, resourceNames: [LATE_ROUTE] },
    ].map((request) => asRead(decodeRequest(encodeRequest(request))));
  }

  /** What Envoy sends on a new stream: CDS with the node, EDS for the clusters it holds, LDS; with the versions it holds when `holding`. */
  open(node: string, holding: boolean): void {
    const version = (typeUrl: string) => (holding ? (this.owner.held.get(typeUrl)?.versionInfo ?? '') : '');
    this.ads.send({ typeUrl: CLUSTER, nodeId: node, versionInfo: version(CLUSTER) });
    this.edsNames = holding ? this.owner.holds(CLUSTER).filter(EDS).map(nameOf).sort() : [];
    if (this.edsNames.length > 0) this.ads.send({ typeUrl: ENDPOINT, resourceNames: this.edsNames, versionInfo: version(ENDPOINT) });
    this.ads.send({ typeUrl: LISTENER, versionInfo: version(LISTENER) });
    this.sdsNames = holding ? secretsWanted((typeUrl) => this.owner.holds(typeUrl)) : [];
    if (this.sdsNames.length > 0) this.ads.send({ typeUrl: SECRET, resourceNames: [...this.sdsNames], versionInfo: version(SECRET) });
  }

  #named(typeUrl: string): readonly string[] {
    return typeUrl === ENDPOINT ? this.edsNames : typeUrl === SECRET ? this.sdsNames : [];
  }

  nack(message: string): void {
    const last = this.ads.responses.at(-1);
    const typeUrl = last?.typeUrl ?? CLUSTER;
    const names = this.#named(typeUrl);
    this.ads.send({ typeUrl, versionInfo: this.owner.held.get(typeUrl)?.versionInfo ?? '', responseNonce: last?.nonce ?? '', resourceNames: [...names], errorDetail: { code: 3, message } });
  }

  ackAgain(): void {
    const last = this.last(LISTENER);
    this.ads.send({ typeUrl: LISTENER, versionInfo: last?.versionInfo ?? '', responseNonce: last?.nonce ?? '' });
  }

  requestAgain(): void {
    this.ads.send({ typeUrl: LISTENER, versionInfo: this.owner.held.get(LISTENER)?.versionInfo ?? '' });
  }

  barrier(name: string): void {
    this.ads.send({ typeUrl: ROUTE, resourceNames: [name] });
  }

  /** Every response is ACKed, as Envoy does; a change of clusters changes the EDS subscription too. */
  protected receive(response: DecodedResponse): void {
    this.sent.push({ typeUrl: response.typeUrl, names: response.resources.map(nameOf), removed: [] });
    this.owner.held.set(response.typeUrl, this.#applied(response));
    const names = this.#named(response.typeUrl);
    this.ads.send({ typeUrl: response.typeUrl, versionInfo: response.versionInfo, responseNonce: response.nonce, resourceNames: [...names] });
    this.answered.add(response.nonce);
    if (response.typeUrl === CLUSTER || response.typeUrl === LISTENER) this.#followSecrets();
    if (response.typeUrl !== CLUSTER) return;
    const wanted = response.resources.filter(EDS).map(nameOf).sort();
    if (wanted.join('\n') === this.edsNames.join('\n')) return;
    this.edsNames = wanted;
    const eds = this.last(ENDPOINT);
    this.ads.send({ typeUrl: ENDPOINT, resourceNames: wanted, versionInfo: eds?.versionInfo ?? '', responseNonce: eds?.nonce ?? '' });
  }

  /**
   * What it holds of the type once `response` is applied: an LDS or CDS response is the whole
   * set; an EDS, RDS or SDS one replaces the resources it carries, and Envoy keeps the others it
   * still asks for (xDS: not full-state).
   */
  #applied(response: DecodedResponse): DecodedResponse {
    if ((FULL_STATE as ReadonlySet<string>).has(response.typeUrl)) return response;
    const named = new Set(this.#named(response.typeUrl));
    const kept = this.owner.holds(response.typeUrl).filter((resource) => named.has(nameOf(resource)));
    const byName = new Map([...kept, ...response.resources].map((resource) => [nameOf(resource), resource]));
    return { ...response, resources: [...byName.values()] };
  }

  /** Asks for the Secrets its clusters and listeners name, once they name any. */
  #followSecrets(): void {
    const wanted = secretsWanted((typeUrl) => this.owner.holds(typeUrl));
    if (wanted.join('\n') === this.sdsNames.join('\n')) return;
    this.sdsNames = wanted;
    const sds = [...this.ads.responses].reverse().find((candidate) => candidate.typeUrl === SECRET);
    this.ads.send({ typeUrl: SECRET, resourceNames: [...wanted], versionInfo: sds?.versionInfo ?? '', responseNonce: sds?.nonce ?? '' });
  }
}

class DeltaModelClient extends Connections<DeltaModelStream> implements ModelClient {
  readonly protocol = 'delta';
  /** What it holds, by type URL, then name: each resource's version and body. */
  readonly held = new Map<string, Map<string, { version: string; resource: Record<string, unknown> }>>();

  holds(typeUrl: string): readonly Record<string, unknown>[] {
    const byName = this.held.get(typeUrl) ?? new Map();
    return [...byName.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, { resource }]) => resource);
  }

  /** name → version of what it holds of a type: its `initial_resource_versions`. */
  versions(typeUrl: string): Record<string, string> {
    return Object.fromEntries([...(this.held.get(typeUrl) ?? new Map())].map(([name, { version }]) => [name, version]));
  }

  protected stream(client: Client): DeltaModelStream {
    return new DeltaModelStream(new DeltaStream(client), this);
  }
}

class DeltaModelStream extends WireStream<DecodedDeltaResponse> implements ModelStream {
  constructor(
    readonly ads: DeltaStream,
    readonly owner: DeltaModelClient,
  ) {
    super(ads);
  }

  lateWords(): StreamRequest[] {
    return [
      { typeUrl: LISTENER, responseNonce: this.last(LISTENER)?.nonce ?? '1' },
      { typeUrl: CLUSTER, responseNonce: this.last(CLUSTER)?.nonce ?? '1', errorDetail: { code: 3, message: LATE_NACK } },
      { typeUrl: ROUTE, subscribe: [LATE_ROUTE] },
    ].map((request) => asRead(decodeDeltaRequest(encodeDeltaRequest(request))));
  }

  /** What Envoy sends on a new Delta stream: the legacy wildcard for CDS and LDS, EDS by name; with what it holds when `holding`. */
  open(node: string, holding: boolean): void {
    if (!holding) this.owner.forget();
    const initial = (typeUrl: string) => (holding ? this.owner.versions(typeUrl) : {});
    this.ads.send({ typeUrl: CLUSTER, nodeId: node, initialVersions: initial(CLUSTER) });
    this.edsNames = this.owner.holds(CLUSTER).filter(EDS).map(nameOf).sort();
    if (this.edsNames.length > 0) this.ads.send({ typeUrl: ENDPOINT, subscribe: [...this.edsNames], initialVersions: initial(ENDPOINT) });
    this.ads.send({ typeUrl: LISTENER, initialVersions: initial(LISTENER) });
    this.sdsNames = secretsWanted((typeUrl) => this.owner.holds(typeUrl));
    if (this.sdsNames.length > 0) this.ads.send({ typeUrl: SECRET, subscribe: [...this.sdsNames], initialVersions: initial(SECRET) });
  }

  nack(message: string): void {
    const last = this.ads.responses.at(-1);
    this.ads.send({ typeUrl: last?.typeUrl ?? CLUSTER, responseNonce: last?.nonce ?? '', errorDetail: { code: 3, message } });
  }

  ackAgain(): void {
    this.ads.send({ typeUrl: LISTENER, responseNonce: this.last(LISTENER)?.nonce ?? '' });
  }

  requestAgain(): void {
    this.ads.send({ typeUrl: LISTENER });
  }

  barrier(name: string): void {
    this.ads.send({ typeUrl: ROUTE, subscribe: [name] });
  }

  /** Applies what came (resources set, removed dropped), ACKs it, and follows new clusters with their EDS subscriptions. */
  protected receive(response: DecodedDeltaResponse): void {
    const { typeUrl } = response;
    this.ads.ack(response);
    this.answered.add(response.nonce);
    // A barrier's answer (the route does not exist) is not part of the conversation the model checks.
    if (typeUrl === ROUTE) return;
    this.sent.push({ typeUrl, names: response.resources.map((resource) => resource.name), removed: response.removed });
    const held = this.owner.held.get(typeUrl) ?? new Map();
    for (const { name, version, resource } of response.resources) held.set(name, { version, resource });
    for (const name of response.removed) held.delete(name);
    this.owner.held.set(typeUrl, held);
    if (typeUrl === CLUSTER || typeUrl === LISTENER) this.#followSecrets();
    if (typeUrl !== CLUSTER) return;
    const wanted = this.owner.holds(CLUSTER).filter(EDS).map(nameOf).sort();
    const subscribe = wanted.filter((name) => !this.edsNames.includes(name));
    const unsubscribe = this.edsNames.filter((name) => !wanted.includes(name));
    this.edsNames = wanted;
    if (subscribe.length === 0 && unsubscribe.length === 0) return;
    // What it no longer asks for it drops itself, as Envoy does.
    const endpoints = this.owner.held.get(ENDPOINT);
    for (const name of unsubscribe) endpoints?.delete(name);
    this.ads.send({ typeUrl: ENDPOINT, subscribe, unsubscribe });
  }

  /** Subscribes to the Secrets its clusters and listeners name, once they name any. */
  #followSecrets(): void {
    const wanted = secretsWanted((typeUrl) => this.owner.holds(typeUrl));
    const subscribe = wanted.filter((name) => !this.sdsNames.includes(name));
    this.sdsNames = wanted;
    if (subscribe.length > 0) this.ads.send({ typeUrl: SECRET, subscribe });
  }
}
