import { beforeEach, describe, expect, it } from 'vitest';
import { ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { envoyHandshake } from '../support/envoy-handshake.js';
import { backendDataplane } from '../support/harness.js';
import { harnessFor } from '../support/harness-for.js';
import { BACKEND, envoyDataplane, getSession, namesOf, settle } from './fixtures.js';

const NODE = 'default.web-1';

const harness = harnessFor({ resources: [BACKEND, envoyDataplane('web-1')] });
let stream: AdsStream;
beforeEach(() => {
  stream = harness.streams.sotw();
});

/** Subscribes like Envoy (wildcard CDS, then EDS for its cluster, then wildcard LDS), leaving the endpoints and listeners for the test to answer. */
const handshake = () => envoyHandshake(stream, NODE, { acks: 'clusters' });

describe('ACK (a request carrying the nonce of the latest response, without error_detail)', () => {
  it('records the ACKed version and nonce per type, visible in GET /sessions/{node}', async () => {
    const { clusters, endpoints, listeners } = await handshake();
    stream.ack(endpoints, ['backend']);
    stream.ack(listeners);
    await settle(stream);

    const { status, body } = await getSession(harness, NODE);
    expect(status).toBe(200);
    expect(body.state).toBe('serving');
    expect(body.types.CDS).toMatchObject({
      sent: { version: clusters.versionInfo, nonce: clusters.nonce, resources: 2 },
      acked: { version: clusters.versionInfo, nonce: clusters.nonce },
    });
    expect(body.types.EDS).toMatchObject({
      subscription: { wildcard: false, names: ['backend'] },
      acked: { version: endpoints.versionInfo, nonce: endpoints.nonce },
    });
    expect(body.types.LDS).toMatchObject({
      subscription: { wildcard: true, names: [] },
      acked: { version: listeners.versionInfo, nonce: listeners.nonce },
    });
    expect(body.types.LDS?.nacked).toBeUndefined();
  });

  it('sends nothing in answer to a plain ACK', async () => {
    const { endpoints, listeners } = await handshake();
    stream.ack(endpoints, ['backend']);
    stream.ack(listeners);
    stream.ack(listeners);
    expect(await settle(stream)).toEqual([]);
  });
});

describe('NACK (detected by error_detail) is recorded and its version is not re-sent', () => {
  async function nackListeners() {
    const { endpoints, listeners } = await handshake();
    stream.ack(endpoints, ['backend']);
    // Envoy's NACK: its previous good version (none yet), the rejected nonce, and why.
    stream.send({
      typeUrl: LISTENER,
      versionInfo: '',
      responseNonce: listeners.nonce,
      errorDetail: { code: 3, message: 'listener inbound:127.0.0.1:10002: bad filter chain' },
    });
    return listeners;
  }

  it('records the NACKed version, nonce and message, visible in GET /sessions/{node}', async () => {
    const listeners = await nackListeners();
    expect(await settle(stream)).toEqual([]);

    const { body } = await getSession(harness, NODE);
    expect(body.types.LDS?.nacked).toMatchObject({
      version: listeners.versionInfo,
      nonce: listeners.nonce,
      message: 'listener inbound:127.0.0.1:10002: bad filter chain',
    });
    expect(body.types.LDS?.acked).toBeUndefined();
    const nack = body.transitions.find((transition) => transition.event === 'xds.nacked');
    expect(nack?.detail).toMatchObject({ version: listeners.versionInfo, message: 'listener inbound:127.0.0.1:10002: bad filter chain' });
  });

  it('does not re-send the NACKed version on ticks or unrelated store changes', async () => {
    await nackListeners();
    expect(await settle(stream)).toEqual([]);

    harness.watchdog.next();
    // Another service appears in the mesh: nothing this Envoy's wildcard LDS holds changes.
    await harness.cp.apply(backendDataplane('other-1', 10003, 'other'));
    harness.watchdog.next();
    expect((await settle(stream)).filter((response) => response.typeUrl === LISTENER)).toEqual([]);
  });

  it('sends the next version of the type once its configuration changes', async () => {
    const rejected = await nackListeners();
    await harness.cp.apply(backendDataplane('other-1', 10003, 'other'));
    expect((await settle(stream)).filter((response) => response.typeUrl === LISTENER)).toEqual([]);

    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'other' }] }));
    const sent = (await settle(stream)).filter((response) => response.typeUrl === LISTENER);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.versionInfo).not.toBe(rejected.versionInfo);
    expect(namesOf(sent[0]!)).toEqual(['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001', 'outbound:127.0.0.1:20002']);
  });
});

describe('only the latest request per type matters', () => {
  it('replaces the subscription with a newer request: changes to the older names send nothing', async () => {
    const { endpoints } = await handshake();
    stream.send({ typeUrl: ENDPOINT, resourceNames: ['web'], versionInfo: endpoints.versionInfo, responseNonce: endpoints.nonce });
    const web = await stream.nextResponse();
    expect(web.typeUrl).toBe(ENDPOINT);
    expect(namesOf(web)).toEqual(['web']);
    stream.ack(web, ['web']);

    await harness.cp.apply(backendDataplane('backend-2', 10004));
    expect((await settle(stream)).filter((response) => response.typeUrl === ENDPOINT)).toEqual([]);
    expect((await getSession(harness, NODE)).body.types.EDS?.subscription).toEqual({ wildcard: false, names: ['web'] });
  });

  it('does not answer a request with a stale nonce, but keeps its subscription change (envoy#10363)', async () => {
    const { endpoints } = await handshake();
    // The backend gains an endpoint: a newer EDS response supersedes the one the client holds.
    await harness.cp.apply(backendDataplane('backend-2', 10004));
    const newer = await stream.nextResponse(4);
    expect(newer.typeUrl).toBe(ENDPOINT);
    expect(newer.nonce).not.toBe(endpoints.nonce);

    // The client, not having seen it yet, asks for one more name with the old nonce.
    stream.send({ typeUrl: ENDPOINT, resourceNames: ['backend', 'web'], versionInfo: endpoints.versionInfo, responseNonce: endpoints.nonce });
    expect(await settle(stream)).toEqual([]);
    expect((await getSession(harness, NODE)).body.types.EDS?.subscription).toEqual({ wildcard: false, names: ['backend', 'web'] });

    // Its ACK of the current nonce gets the newly named resource.
    stream.ack(newer, ['backend', 'web']);
    const [both, ...rest] = await settle(stream);
    expect(rest).toEqual([]);
    expect(both?.typeUrl).toBe(ENDPOINT);
    expect(namesOf(both!)).toEqual(['backend', 'web']);
  });
});
