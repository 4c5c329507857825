import { createServer, type AddressInfo, type Server } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SessionView } from '../../src/machines/session-view.js';
import { envoyBinary } from '../support/envoy.js';
import { HttpClient } from '../support/http-backend.js';
import { freePort } from '../support/ports.js';
import { reaches } from '../support/real-clients/index.js';
import { sidecarsEach, XDS_MODES, type DataplaneSpec } from '../support/real-clients/sidecar-mesh.js';
import { launchBrowser } from '../ui/ui-support.js';

/**
 * A NACK from a real Envoy: a Dataplane whose outbound port another process already holds makes
 * Envoy refuse that listener. Chancery shows Envoy's own words, does not send the refused version
 * again, keeps serving the rest, and the node recovers once the Dataplane is fixed.
 */

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

/** A process-level squatter: a socket bound on 127.0.0.1, as another program on the host would hold it. */
async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, server };
}

function withOutbound(dataplane: DataplaneSpec, outbound: readonly { port: number; service: string }[]): DataplaneSpec {
  return { ...dataplane, networking: { ...dataplane.networking, outbound } };
}

describe.each(XDS_MODES)('a listener real Envoy refuses, over %s', (mode) => {
  const sidecars = sidecarsEach(mode);
  let squatter: Server | undefined;
  afterEach(() => {
    squatter?.close();
  });

  async function session(node: string): Promise<SessionView> {
    const response = await fetch(`http://${sidecars.harness.api}/sessions/${node}`);
    expect(response.status).toBe(200);
    return (await response.json()) as SessionView;
  }

  it('is recorded with Envoy’s own error and not sent again; the rest is served; fixing the Dataplane recovers the node', async () => {
    await sidecars.mesh.addBackend('backend-1');
    const client = await sidecars.mesh.addClient('web-1');
    await reaches(client, ['backend-1']);
    const [working] = client.dataplane.networking.outbound!;
    const held = await holdPort();
    squatter = held.server;

    await sidecars.mesh.put(withOutbound(client.dataplane, [working!, { port: held.port, service: 'echo' }]));
    await client.envoy.waitFor('the listener refused', async () => (await client.envoy.stat('listener_manager.lds.update_rejected')) === 1);
    const refused = await session(client.node);
    const lds = refused.types['LDS']!;
    expect(lds.nacked?.message).toContain(`cannot bind '127.0.0.1:${held.port}': Address already in use`);
    expect(lds.nacked?.nonce).toBe(lds.sent?.nonce);
    expect(lds.acked?.version).not.toBe(lds.sent?.version);
    const nacking = (await (await fetch(`http://${sidecars.harness.api}/sessions?nacking=true`)).json()) as { items: SessionView[] };
    expect(nacking.items.map((item) => item.node)).toEqual([client.node]);

    // Ticks and a change that reaches the node (a new endpoint) do not send the refused listeners again...
    const attempts = await client.envoy.stat('listener_manager.lds.update_attempt');
    sidecars.harness.watchdog.next();
    sidecars.harness.watchdog.next();
    await sidecars.mesh.addBackend('backend-2');
    // ...and the rest is still served: the new endpoint arrives, and requests flow through the listener Envoy holds.
    await reaches(client, ['backend-1', 'backend-2']);
    sidecars.harness.watchdog.next();
    expect(client.traffic.failures).toEqual([]);
    expect((await session(client.node)).types['LDS']?.sent?.nonce).toBe(lds.sent?.nonce);
    expect(await client.envoy.stat('listener_manager.lds.update_attempt')).toBe(attempts);
    expect(await client.envoy.stat('listener_manager.lds.update_rejected')).toBe(1);

    // The node page says what Envoy said.
    const page = await browser.newPage();
    try {
      await page.goto(`http://${sidecars.harness.api}/ui#/nodes/${client.node}`);
      await page.locator('.timeline', { hasText: 'Address already in use' }).waitFor();
      expect(await page.locator('.timeline').textContent()).toContain(`cannot bind '127.0.0.1:${held.port}'`);
    } finally {
      await page.close();
    }

    // Fixed: the outbound moves to a free port; Envoy takes the new listeners and the node is no longer NACKing.
    const moved = await freePort();
    await sidecars.mesh.put(withOutbound(client.dataplane, [working!, { port: moved, service: 'echo' }]));
    await client.envoy.waitFor('both outbound listeners', async () => (await client.envoy.stat('listener_manager.total_listeners_active')) === 2);
    const fixed = (await session(client.node)).types['LDS']!;
    expect(fixed.acked?.version).toBe(fixed.sent?.version);
    expect(fixed.sent?.nonce).not.toBe(lds.sent?.nonce);
    expect((await new HttpClient(moved).echo(5_000)).servedBy).toMatch(/^backend-[12]$/);
    expect(await client.envoy.stat('listener_manager.lds.update_rejected')).toBe(1);
    expect(await client.envoy.stat('listener_manager.listener_removed')).toBe(0);
    const stillNacking = (await (await fetch(`http://${sidecars.harness.api}/sessions?nacking=true`)).json()) as { items: SessionView[] };
    expect(stillNacking.items).toEqual([]);
  });
});
