import { describe, expect, it } from 'vitest';
import type { SessionView } from '../../src/machines/index.js';
import { envoyBinary } from '../support/envoy.js';
import { startHttpBackend } from '../support/http-backend.js';
import { eventually } from '../support/traffic.js';
import { enableMtls } from './mtls-support.js';
import { reaches, SERVICE } from '../support/real-clients/index.js';
import { sidecarsEach, XDS_MODES, type Backend, type Client, type Sidecar } from '../support/real-clients/sidecar-mesh.js';
import { freePort } from '../support/ports.js';

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

/** Envoy's counters that any disruption of mTLS would raise, beside the wipe counters. */
const TLS_ERRORS = [`cluster.${SERVICE}.ssl.connection_error`, `cluster.${SERVICE}.upstream_cx_connect_fail`] as const;

describe.each(XDS_MODES)('mTLS changes under continuous traffic over %s', (mode) => {
  const sidecars = sidecarsEach(mode);

  const view = async (node: string) => (await (await fetch(`http://${sidecars.harness.api}/sessions/${node}`)).json()) as SessionView;
  const nodes = () => sidecars.mesh.sidecars.map((sidecar) => sidecar.node);
  /** Every node ACKed the last response of every type it was sent. */
  const converged = async () => {
    for (const node of nodes()) {
      const { types } = await view(node);
      if (Object.values(types).some((type) => type.sent !== undefined && type.acked?.nonce !== type.sent.nonce)) return false;
    }
    return true;
  };
  const serials = async () => Promise.all(nodes().map(async (node) => (await view(node)).certificate?.serial));
  const caList = async () => (await (await fetch(`http://${sidecars.harness.api}/meshes/default/ca`)).json()) as { items: Array<{ id: string; signing: boolean; certificates: number }> };

  it('goes disabled → permissive → strict, renews certificates twice, rotates the CA and removes the old one, failing no request', async () => {
    const backends: Backend[] = [await sidecars.mesh.addBackend('backend-1'), await sidecars.mesh.addBackend('backend-2')];
    // An endpoint without a sidecar: it speaks plaintext only, and never reports what it accepts.
    const legacy = await startHttpBackend('legacy-1');
    await sidecars.mesh.put({ type: 'Dataplane', mesh: 'default', name: 'legacy-1', networking: { address: '127.0.0.1', inbound: [{ port: legacy.port, tags: { service: SERVICE } }] } });
    const client: Client = await sidecars.mesh.addClient('web-1');
    await reaches(client, ['backend-1', 'backend-2', 'legacy-1']);
    const watch = sidecars.mesh.watch();
    let stop!: () => void;
    const flowing = client.traffic.during(new Promise<void>((resolve) => (stop = resolve)), 'the mTLS changes', 55_000);

    // permissive: inbounds take both, and the client keeps plaintext while one endpoint cannot take TLS (Kuma's rule, I8).
    await enableMtls(sidecars.harness.api, { mode: 'permissive', certificateTTL: '30s' });
    const permissive = (name: string) => sidecars.harness.cp.store.list('DataplaneTls', 'default').some(({ resource }) => resource.name === name && resource.inbound === 'permissive');
    await eventually('both sidecars reporting permissive inbounds', () => permissive('backend-1') && permissive('backend-2'), { attempts: 400, every: 25 });
    await eventually('every node converged on permissive', converged, { attempts: 400, every: 25 });
    const servedByLegacy = legacy.served;
    await eventually('legacy-1 still answering', () => legacy.served > servedByLegacy + 3, { attempts: 2_000 });
    expect(await client.envoy.stat(`cluster.${SERVICE}.ssl.handshake`)).toBe(0);
    // Once the plaintext endpoint leaves, every endpoint accepts TLS: the client turns to it.
    await sidecars.mesh.delete('legacy-1');
    await client.envoy.waitFor('a TLS handshake from the client', async () => (await client.envoy.stat(`cluster.${SERVICE}.ssl.handshake`)) > 0);
    // strict: plaintext goes, the client already speaks TLS.
    await enableMtls(sidecars.harness.api, { mode: 'strict', certificateTTL: '30s' });
    await eventually('every node converged on strict', converged, { attempts: 400, every: 25 });
    const handshakes = await client.envoy.stat(`cluster.${SERVICE}.ssl.handshake`);
    await eventually('more TLS requests', async () => (await client.envoy.stat(`cluster.${SERVICE}.ssl.handshake`)) > handshakes + 10, { attempts: 400 });

    // Two renewals: the chart's certificate.due fires on the injected clock at 2/3 of 30 s.
    for (let round = 0; round < 2; round++) {
      const before = await serials();
      sidecars.harness.clock.increment(21_000);
      await eventually(`renewal round ${round + 1}`, async () => (await serials()).every((serial, i) => serial !== undefined && serial !== before[i]), { attempts: 400, every: 25 });
      await eventually('every node converged on its new certificate', converged, { attempts: 400, every: 25 });
    }
    expect(await client.envoy.stat(`cluster.${SERVICE}.ssl.handshake`)).toBeGreaterThan(handshakes);

    // Rotation: ca-2 joins every bundle, signs once all trust it, and certificates move to it at renewal.
    expect((await fetch(`http://${sidecars.harness.api}/meshes/default/ca`, { method: 'POST' })).status).toBe(201);
    await eventually('ca-2 signing', async () => (await caList()).items.find((ca) => ca.id === 'ca-2')?.signing === true, { attempts: 400, every: 25 });
    // Connected dataplanes still hold certificates ca-1 signed: removing it now would fail their handshakes.
    const early = await fetch(`http://${sidecars.harness.api}/meshes/default/ca/ca-1`, { method: 'DELETE' });
    expect(early.status).toBe(409);
    expect(await early.json()).toMatchObject({ code: 'CHANCERY_IDENTITY_CA_IN_USE', reason: expect.stringMatching(/connected dataplanes hold certificates it signed \(backend-1, backend-2, web-1\)/) });
    sidecars.harness.clock.increment(21_000);
    await eventually('every certificate from ca-2', async () => (await Promise.all(nodes().map(view))).every((session) => session.certificate?.issuer === 'ca-2'), { attempts: 400, every: 25 });
    await eventually('every node converged on ca-2', converged, { attempts: 400, every: 25 });
    await eventually('ca-1 holding no certificate', async () => (await caList()).items.find((ca) => ca.id === 'ca-1')?.certificates === 0, { attempts: 400, every: 25 });
    expect((await fetch(`http://${sidecars.harness.api}/meshes/default/ca/ca-1`, { method: 'DELETE' })).status).toBe(204);
    await eventually('every node converged on the bundle without ca-1', converged, { attempts: 400, every: 25 });
    const after = client.traffic.servedBy.length;
    await eventually('20 more requests', () => client.traffic.servedBy.length >= after + 20, { attempts: 2_000 });
    stop();
    await flowing;

    expect(client.traffic.failures).toEqual([]);
    expect(new Set(client.traffic.servedBy.slice(after))).toEqual(new Set(['backend-1', 'backend-2']));
    expect(await watch.end()).toEqual([]);
    for (const stat of TLS_ERRORS) expect(await client.envoy.stat(stat), stat).toBe(0);
    for (const backend of backends) expect(backend.app.served).toBeGreaterThan(0);
    await legacy.stop();
    expect(await (await fetch(`http://${sidecars.harness.api}/metrics`)).text()).toMatch(/^chancery_certificate_renewals_total (\d+)$/m);
  }, 90_000);
});
