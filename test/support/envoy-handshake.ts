import { CLUSTER, ENDPOINT, LISTENER, type DecodedResponse } from '../../src/xds/index.js';
import type { AdsStream } from './ads-client.js';

/** The first response of each type a handshake got. */
export interface Handshake {
  readonly clusters: DecodedResponse;
  readonly endpoints: DecodedResponse;
  readonly listeners: DecodedResponse;
}

export interface HandshakeOptions {
  /** Whether it asks for the endpoints of the EDS clusters it was sent (default: yes, as Envoy does). */
  readonly endpoints?: boolean;
  /** What it ACKs: every response (default), or the clusters only, leaving the rest for the test to ACK or NACK. */
  readonly acks?: 'all' | 'clusters';
  /** NACKs the listeners with this message instead of ACKing them. */
  readonly nackListeners?: string;
}

/**
 * Subscribes on a new SotW `stream` as Envoy does over ADS: wildcard CDS carrying the node,
 * then EDS for the EDS clusters it was sent, then wildcard LDS, ACKing each response (as
 * `options` say); resolves with the first response of each type.
 */
export async function envoyHandshake(stream: AdsStream, node: string, options?: HandshakeOptions & { readonly endpoints?: true }): Promise<Handshake>;
export async function envoyHandshake(stream: AdsStream, node: string, options: HandshakeOptions): Promise<Omit<Handshake, 'endpoints'>>;
export async function envoyHandshake(stream: AdsStream, node: string, { endpoints = true, acks = 'all', nackListeners }: HandshakeOptions = {}): Promise<Omit<Handshake, 'endpoints'> & Partial<Handshake>> {
  stream.send({ typeUrl: CLUSTER, nodeId: node });
  const clusters = await stream.nextResponse();
  stream.ack(clusters);
  let assignments: DecodedResponse | undefined;
  if (endpoints) {
    const names = clusters.resources.filter((cluster) => cluster['type'] === 'EDS').map((cluster) => String(cluster['name']));
    stream.send({ typeUrl: ENDPOINT, resourceNames: names });
    assignments = await stream.nextResponse();
    if (acks === 'all') stream.ack(assignments, names);
  }
  stream.send({ typeUrl: LISTENER });
  const listeners = await stream.nextResponse();
  if (nackListeners === undefined) {
    if (acks === 'all') stream.ack(listeners);
  } else stream.send({ typeUrl: LISTENER, versionInfo: '', responseNonce: listeners.nonce, errorDetail: { code: 3, message: nackListeners } });
  return { clusters, listeners, ...(assignments && { endpoints: assignments }) };
}
