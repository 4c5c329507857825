import { Client, credentials, Metadata } from '@grpc/grpc-js';
import type { ControlPlane } from '../../src/index.js';
import type { SessionState, SessionView } from '../../src/machines/session-view.js';
import type { DecodedResponse } from '../../src/xds/decode.js';
import { ROUTE } from '../../src/xds/type-urls.js';
import { encodeRequest } from '../../src/xds/xds-request.js';
import type { AdsStream, StreamEnd } from '../support/ads-client.js';
import { backendDataplane, type Harness } from '../support/harness.js';

/** `backend-1` serves service `backend` on 10001: every fixture mesh has this service. */
export const BACKEND = backendDataplane('backend-1', 10001);

export interface EnvoySpec {
  readonly inbound?: readonly { port: number; servicePort?: number; service: string }[];
  readonly outbound?: readonly { port: number; service: string }[];
}

/** An Envoy sidecar's Dataplane: by default `web` on 10002 (app on 9002), calling `backend` on 20001. */
export function envoyDataplane(name: string, spec: EnvoySpec = {}, mesh = 'default') {
  const inbound = spec.inbound ?? [{ port: 10002, servicePort: 9002, service: 'web' }];
  const outbound = spec.outbound ?? [{ port: 20001, service: 'backend' }];
  return {
    type: 'Dataplane',
    mesh,
    name,
    networking: {
      address: '127.0.0.1',
      inbound: inbound.map(({ port, servicePort, service }) => ({ port, ...(servicePort && { servicePort }), tags: { service } })),
      outbound: [...outbound],
    },
  };
}

/** The names a response carries, in order. */
export function namesOf(response: DecodedResponse): string[] {
  return response.resources.map((resource) => String(resource.name ?? resource.cluster_name));
}

/** `GET /sessions/{node}` over real HTTP. */
export async function getSession(harness: Harness, node: string): Promise<{ status: number; body: SessionView }> {
  const response = await fetch(`http://${harness.api}/sessions/${encodeURIComponent(node)}`);
  return { status: response.status, body: (await response.json()) as SessionView };
}

/** Resolves once `node`'s session is in `state` (now or on a later transition). */
export function sessionIn(cp: ControlPlane, node: string, state: SessionState): Promise<SessionView> {
  return new Promise((resolve) => {
    const subscription = cp.sessions.subscribe((view) => {
      if (view.node !== node || view.state !== state) return;
      subscription.unsubscribe();
      resolve(view);
    });
    const current = cp.session(node);
    if (current?.state === state) {
      subscription.unsubscribe();
      resolve(current);
    }
  });
}

const barriers = new WeakMap<AdsStream, number>();

/**
 * Everything the server wrote on `stream` since now, up to a point the server has certainly
 * passed. It sends an RDS request that changes the subscription (so a response is owed) and
 * waits for that response: one stream's responses are written in order, so any response the
 * requests before it caused has arrived by then. Needs a served session whose mesh has the
 * service `backend`; tests using it do not subscribe to RDS themselves.
 */
export async function settle(stream: AdsStream): Promise<DecodedResponse[]> {
  const mark = stream.responses.length;
  const round = (barriers.get(stream) ?? 0) + 1;
  barriers.set(stream, round);
  stream.send({ typeUrl: ROUTE, resourceNames: ['backend', `barrier-${round}`] });
  await stream.until(() => stream.responses.slice(mark).some((response) => response.typeUrl === ROUTE), 'the barrier response');
  const since = stream.responses.slice(mark);
  return since.slice(0, since.findIndex((response) => response.typeUrl === ROUTE));
}

/**
 * Opens a bidi call to any method on the xDS port, sends one DiscoveryRequest (or none), and
 * resolves with the status the server ends it with.
 */
export function callStatus(address: string, path: string, request?: Parameters<typeof encodeRequest>[0]): Promise<StreamEnd> {
  const client = new Client(address, credentials.createInsecure());
  return new Promise<StreamEnd>((resolve) => {
    const call = client.makeBidiStreamRequest(path, (value: Uint8Array) => Buffer.from(value), (bytes: Buffer) => bytes, new Metadata());
    call.on('data', () => undefined);
    call.on('error', () => undefined);
    call.on('status', (status: StreamEnd) => resolve({ code: status.code, details: status.details }));
    if (request) call.write(encodeRequest(request));
  }).finally(() => client.close());
}

/** A unary call to the xDS port; resolves with the status (or OK). */
export function unaryStatus(address: string, path: string): Promise<StreamEnd> {
  const client = new Client(address, credentials.createInsecure());
  return new Promise<StreamEnd>((resolve) => {
    client.makeUnaryRequest(
      path,
      (value: Uint8Array) => Buffer.from(value),
      (bytes: Buffer) => bytes,
      new Uint8Array(),
      (error) => resolve(error ? { code: error.code, details: error.details } : { code: 0, details: '' }),
    );
  }).finally(() => client.close());
}
