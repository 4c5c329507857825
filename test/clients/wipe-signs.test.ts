import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { envoyBinary } from '../support/envoy.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { freePort } from '../support/ports.js';
import { PROXYLESS_KINDS } from '../support/real-clients/echo-process.js';
import { reaches } from '../support/real-clients/index.js';
import { ProxylessMesh } from '../support/real-clients/proxyless-mesh.js';
import { SidecarMesh } from '../support/real-clients/sidecar-mesh.js';

/**
 * The seed scenarios assert that no real client shows a sign of a wipe (`RealMesh.watch`); this
 * proves each kind of sign appears when a client really is told to drop what it uses, so that
 * assertion can fail. The removals here are legitimate: the configuration changed.
 */

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

let harness: Harness;
const stops: Array<() => Promise<void>> = [];
beforeEach(async () => {
  harness = await startHarness();
});
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  await harness.stop();
});

describe('an Envoy sidecar whose outbound listener is moved to another port', () => {
  it('shows the listener removed', async () => {
    const mesh = new SidecarMesh(harness.api, harness.xds, 'sotw');
    stops.push(() => mesh.stop());
    await mesh.addBackend('backend-1');
    const client = await mesh.addClient('web-1');
    await reaches(client, ['backend-1']);
    const watch = mesh.watch();

    const [outbound] = client.dataplane.networking.outbound!;
    await mesh.put({ ...client.dataplane, networking: { ...client.dataplane.networking, outbound: [{ ...outbound!, port: await freePort() }] } });
    await client.envoy.waitFor('the old listener removed', async () => (await client.envoy.stat('listener_manager.listener_removed')) > 0);

    expect(await watch.end()).toContain(`${client.node}: listener_manager.listener_removed 1`);
  });
});

describe.each(PROXYLESS_KINDS)('a %s client whose service goes away', (kind) => {
  it('shows its listener concluded not to exist, and its calls fail', async () => {
    // Another service stays, so the client's configuration is not empty (which Chancery never sends, I1).
    await harness.cp.apply(backendDataplane('other-1', await freePort(), 'other'));
    const mesh = new ProxylessMesh(harness.api, harness.xds, kind);
    stops.push(() => mesh.stop());
    await mesh.addBackend('backend-1');
    const client = await mesh.addClient('web-1');
    await reaches(client, ['backend-1']);
    const watch = mesh.watch();

    await mesh.delete('backend-1');
    await client.traffic.until('a call failing', ([last]) => last === 'failed');

    const signs = await watch.end();
    expect(signs.length, signs.join('\n')).toBeGreaterThan(0);
    for (const sign of signs) expect(sign).toMatch(new RegExp(`^${client.node}: .*does not exist`));
  });
});
