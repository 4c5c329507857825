import { describe, expect, it } from 'vitest';
import type { SessionView } from '../../src/machines/index.js';
import { runCli } from '../cli/cli-harness.js';
import { envoyBinary } from '../support/envoy.js';
import { eventually } from '../support/traffic.js';
import { reaches, SERVICE } from '../support/real-clients/index.js';
import { sidecarsEach, XDS_MODES } from '../support/real-clients/sidecar-mesh.js';
import { enableMtls } from './mtls-support.js';

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

/**
 * An Envoy that reconnects holding configuration its Dataplane gives again (the README's walk-through:
 * echo-1 deleted while its Envoy runs, then written again). Over SotW it says in its first request
 * which version of each wildcard type it holds, and is not sent that version again: what it holds
 * counts as ACKed, so a write's rollout completes and its mTLS status is written.
 */
describe.each(XDS_MODES)('an Envoy reconnecting with the configuration it holds, over %s', (mode) => {
  const sidecars = sidecarsEach(mode);

  const cli = (args: readonly string[], stdin: string) => runCli(args, { env: { CHANCERY_API_ADDRESS: sidecars.harness.api }, stdin });
  const view = async (node: string) => (await (await fetch(`http://${sidecars.harness.api}/sessions/${node}`)).json()) as SessionView;

  it('counts what it holds as ACKed: the write that gives it back completes, and its clients turn to mTLS', async () => {
    const backend = await sidecars.mesh.addBackend('backend-1');
    const client = await sidecars.mesh.addClient('web-1');
    await reaches(client, ['backend-1']);
    await sidecars.mesh.delete('backend-1');
    await eventually('backend-1 waiting for its Dataplane on a new stream', async () => (await view(backend.node)).state === 'awaiting-snapshot', { attempts: 400, every: 25 });

    const written = await cli(['apply', '--wait', '--timeout', '10s', '-f', '-'], JSON.stringify(backend.dataplane));
    expect(written.stdout + written.stderr).toContain('Complete');
    expect(written.code).toBe(0);
    const { types } = await view(backend.node);
    for (const [type, status] of Object.entries(types)) if (status.sent !== undefined) expect(status.acked?.nonce, `${type} of backend-1`).toBe(status.sent.nonce);

    // Its status is what tells its clients they may speak TLS to it (Kuma's rule, I8).
    await enableMtls(sidecars.harness.api, { mode: 'permissive', certificateTTL: '1h' });
    const permissive = () => sidecars.harness.cp.store.list('DataplaneTls', 'default').some(({ resource }) => resource.name === 'backend-1' && resource.inbound === 'permissive');
    await eventually('backend-1 reporting a permissive inbound', permissive, { attempts: 400, every: 25 });
    await client.envoy.waitFor('a TLS handshake from web-1', async () => {
      await client.traffic.call();
      return (await client.envoy.stat(`cluster.${SERVICE}.ssl.handshake`)) > 0;
    });
    expect(client.traffic.failures).toEqual([]);
  }, 60_000);
});
