import type { Protocol } from '../../../src/xds/index.js';
import type { Traffic } from '../traffic.js';

/** The service every backend serves and every client calls. */
export const SERVICE = 'echo';

/** A backend app of a `RealMesh`, answering each call with its name. */
export interface RealBackend {
  readonly name: string;
  /** Calls it has answered. */
  readonly served: number;
}

/** A client app of a `RealMesh`, calling `SERVICE` through its real xDS client. */
export interface RealClient {
  readonly name: string;
  readonly node: string;
  /** Calls to `SERVICE`: who answered each, and every failure. */
  readonly traffic: Traffic;
}

/** Watches a mesh's xDS clients for being told to drop what they hold. */
export interface WipeWatch {
  /** Stops watching; answers each sign of a wipe as `<node>: <what>`, none when nothing was wiped. */
  end(): Promise<string[]>;
}

/**
 * The apps and real xDS clients of one test, against one Chancery: Dataplanes are written
 * through its HTTP API at `api`, and each xDS client dials `xds` (Chancery, or a balancer in
 * front of it) from the bootstrap `chancery bootstrap` prints for its node.
 */
export interface RealMesh {
  /** Where Dataplanes are written and bootstraps read; a test moves it when Chancery restarts elsewhere. */
  api: string;
  /** Starts an app serving `SERVICE` and writes its Dataplane; resolves once clients can be sent to it. */
  addBackend(name: string): Promise<RealBackend>;
  /** Starts a client of `SERVICE` and writes its Dataplane; resolves once its xDS client is served. */
  addClient(name: string): Promise<RealClient>;
  /** Deletes a Dataplane; its app and xDS client keep running. */
  delete(name: string): Promise<void>;
  /** The nodes whose xDS client runs and whose Dataplane exists: the ones Chancery serves. */
  readonly served: readonly string[];
  /** How many ADS streams each running xDS client has opened, by its own account, by node. */
  adsStreams(): Promise<Record<string, number>>;
  /** Starts watching every xDS client running now for signs, by its own account, that it was told to drop configuration. */
  watch(): WipeWatch;
  stop(): Promise<void>;
}

/**
 * One kind of real dataplane, over one xDS protocol: a scenario written once runs against each
 * (`describe.each(REAL_CLIENTS)`), asserting what holds for all of them: no call fails, no
 * client is told to drop what it holds.
 */
export interface RealClientKind {
  /** How a test names it: `Envoy over delta`. */
  readonly name: string;
  readonly protocol: Protocol;
  deploy(api: string, xds: string): RealMesh;
}

/** Makes calls until each of `names` has answered one of the last few, or fails naming what was seen. */
export function reaches(client: { readonly traffic: Traffic }, names: readonly string[]): Promise<void> {
  return client.traffic.until(`answer from each of ${names.join(', ')}`, (recent) => names.every((name) => recent.includes(name)), {
    window: names.length * 6,
    attempts: 2_000,
  });
}
