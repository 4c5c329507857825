import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DecodedResponse } from '../../src/xds/decode.js';
import { ENDPOINT } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { envoyHandshake } from '../support/envoy-handshake.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { OpenStreams } from '../support/open-streams.js';
import { BACKEND, envoyDataplane, namesOf, settle, type EnvoySpec } from './fixtures.js';

// Nodes subscribed alike are sent one encoded body, each with its own nonce (response-encoder.ts):
// a change fanned out must still give every node its own selection and its own stream's nonce.
const NODES: Record<string, EnvoySpec> = {
  'web-1': { outbound: [{ port: 20001, service: 'backend' }] },
  'web-2': { outbound: [{ port: 20001, service: 'backend' }] },
  'web-3': { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] },
  'web-4': { inbound: [{ port: 10004, servicePort: 9004, service: 'web' }], outbound: [{ port: 20001, service: 'backend' }] },
};

let harness: Harness;
const streams = new OpenStreams(() => harness.xds);
beforeEach(async () => {
  harness = await startHarness();
  await harness.cp.apply(BACKEND);
  await harness.cp.apply(backendDataplane('payments-1', 10011, 'payments'));
  for (const [name, spec] of Object.entries(NODES)) await harness.cp.apply(envoyDataplane(name, spec));
});
afterEach(async () => {
  streams.closeAll();
  await harness.stop();
});

/** Connects an Envoy node: CDS, EDS for its clusters, then LDS, each ACKed. */
async function connect(name: string): Promise<{ stream: AdsStream; listeners: DecodedResponse; edsNames: string[] }> {
  const stream = streams.sotw();
  const { endpoints, listeners } = await envoyHandshake(stream, `default.${name}`);
  return { stream, listeners, edsNames: namesOf(endpoints) };
}

/** Per cluster of an EDS response, the ports of its endpoints, sorted. */
function ports(response: DecodedResponse): Record<string, number[]> {
  return Object.fromEntries(
    response.resources.map((assignment: any) => [
      assignment.cluster_name,
      (assignment.endpoints ?? []).flatMap((locality: any) => locality.lb_endpoints.map((lb: any) => lb.endpoint.address.socket_address.port_value)).sort(),
    ]),
  );
}

describe('responses shared by nodes subscribed alike', () => {
  it('sends every node of a change its own endpoints, under its own stream’s nonce', async () => {
    const nodes = Object.fromEntries(await Promise.all(Object.keys(NODES).map(async (name) => [name, await connect(name)] as const)));
    // web-2's stream is two responses ahead of web-1's: equal bodies, other nonces.
    await settle(nodes['web-2']!.stream);
    await settle(nodes['web-2']!.stream);
    const before = Object.fromEntries(Object.entries(nodes).map(([name, { stream }]) => [name, stream.responses.length]));

    await harness.cp.apply(backendDataplane('backend-2', 10021));
    const pushed = Object.fromEntries(
      await Promise.all(Object.entries(nodes).map(async ([name, { stream }]) => [name, await stream.nextResponse(before[name]! + 1)] as const)),
    );

    // The changed ClusterLoadAssignment alone: web-3 keeps payments' as it holds it (SotW EDS is not full-state).
    expect(Object.fromEntries(Object.entries(pushed).map(([name, response]) => [name, ports(response)]))).toEqual({
      'web-1': { backend: [10001, 10021] },
      'web-2': { backend: [10001, 10021] },
      'web-3': { backend: [10001, 10021] },
      'web-4': { backend: [10001, 10021] },
    });
    expect(pushed['web-2']!.versionInfo).toBe(pushed['web-1']!.versionInfo);
    expect(pushed['web-2']!.nonce).not.toBe(pushed['web-1']!.nonce);
    for (const [name, response] of Object.entries(pushed)) {
      expect(response.typeUrl).toBe(ENDPOINT);
      expect(harness.cp.session(`default.${name}`)?.types.EDS?.sent?.nonce).toBe(response.nonce);
    }
    // Each stream's ACK names its own nonce, and is taken as the ACK of what that stream was sent.
    for (const [name, { stream, edsNames }] of Object.entries(nodes)) stream.ack(pushed[name]!, edsNames);
    for (const [name, { stream }] of Object.entries(nodes)) {
      await settle(stream);
      const eds = harness.cp.session(`default.${name}`)?.types.EDS;
      expect(eds?.acked?.nonce).toBe(eds?.sent?.nonce);
    }
    // Nodes' own listeners stayed their own: web-4's inbound is on its own port.
    expect(namesOf(nodes['web-4']!.listeners)).toContain('inbound:127.0.0.1:10004');
    expect(namesOf(nodes['web-1']!.listeners)).not.toContain('inbound:127.0.0.1:10004');
  });
});
