import { describe, expect, it } from 'vitest';
import { envoyBinary } from '../support/envoy.js';
import { reaches } from '../support/real-clients/index.js';
import { sidecarsEach, XDS_MODES } from '../support/real-clients/sidecar-mesh.js';
import { eventually } from '../support/traffic.js';

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

describe.each(XDS_MODES)('Envoy sidecars over %s, each started from chancery bootstrap envoy', (mode) => {
  const sidecars = sidecarsEach(mode);

  it('carry requests from a client to every backend, follow a backend added and one deleted, and fail none', async () => {
    await sidecars.mesh.addBackend('backend-1');
    const second = await sidecars.mesh.addBackend('backend-2');
    const client = await sidecars.mesh.addClient('web-1');
    await reaches(client, ['backend-1', 'backend-2']);

    const watch = sidecars.mesh.watch();
    let stop!: () => void;
    const flowing = client.traffic.during(new Promise<void>((resolve) => (stop = resolve)));
    const third = await sidecars.mesh.addBackend('backend-3');
    await eventually('a request answered by backend-3', () => third.app.served > 0, { attempts: 2_000 });

    await sidecars.mesh.delete('backend-2');
    await client.envoy.waitFor('backend-2 gone from the client’s cluster', async () => (await client.envoy.stat(`cluster.echo.membership_total`)) === 2);
    // A request already on its way to backend-2 may still land; one that completes after this started after.
    const completed = client.traffic.completed;
    await eventually('one more request', () => client.traffic.completed > completed);
    const servedBySecond = second.app.served;
    const after = client.traffic.servedBy.length;
    await eventually('30 more requests', () => client.traffic.servedBy.length >= after + 30, { attempts: 2_000 });
    stop();
    await flowing;

    expect(client.traffic.failures).toEqual([]);
    expect(second.app.served, 'requests reached backend-2 after it was deleted').toBe(servedBySecond);
    expect(new Set(client.traffic.servedBy.slice(after))).toEqual(new Set(['backend-1', 'backend-3']));
    expect(await watch.end()).toEqual([]);
  });
});
