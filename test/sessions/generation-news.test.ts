import { filter, firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Projection } from '../../src/store/index.js';
import { CLUSTER, ENDPOINT, LISTENER, SECRET } from '../../src/xds/type-urls.js';
import { AdsStream } from '../support/ads-client.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';

const NODE = 'default.web-1';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness();
});
afterAll(() => harness.stop());

/** Resolves with the first projection, from now on, where `predicate` holds. */
const projectionWhere = (predicate: (projection: Projection) => boolean) => firstValueFrom(harness.cp.store.projections.pipe(filter(predicate)));

describe('store changes the sessions hear of (GenerationNews)', () => {
  it('a round of mTLS statuses that changes no client’s TLS makes no session generate again; the next change that matters does', async () => {
    await harness.cp.apply({ type: 'Mesh', name: 'default', dataplaneAuth: 'none', mtls: { mode: 'strict', certificateTTL: '24h' } });
    await harness.cp.apply(backendDataplane('backend-1', 10001));
    await harness.cp.apply({ type: 'Dataplane', mesh: 'default', name: 'web-1', networking: { address: '127.0.0.1', inbound: [{ port: 10002, tags: { service: 'web' } }], outbound: [{ port: 20001, service: 'backend' }] } });
    const stream = AdsStream.open(harness.xds);
    try {
      // An Envoy's first exchanges: everything it is sent ACKed, so its instance writes its status.
      stream.send({ typeUrl: CLUSTER, nodeId: NODE });
      stream.ack(await stream.nextResponse());
      stream.send({ typeUrl: LISTENER });
      stream.ack(await stream.nextResponse());
      stream.send({ typeUrl: SECRET, resourceNames: ['mtls:identity', 'mtls:trust:default'] });
      const secrets = await stream.nextResponse();
      const served = harness.cp.session(NODE)!.revision!;
      const written = projectionWhere((projection) => projection.meshes.get('default')!.tls.has('web-1'));
      stream.ack(secrets, ['mtls:identity', 'mtls:trust:default']);
      const statuses = await written;
      expect(statuses.revision).toBeGreaterThan(served);

      // Not news: the session serves what it did, nothing is pushed, and the watchdog finds it
      // current. A request answered after the tick was handed out shows the tick was taken: the
      // scheduler runs a store change or tick before requests that came after it.
      harness.watchdog.next();
      stream.send({ typeUrl: ENDPOINT, resourceNames: ['backend'] });
      const endpoints = await stream.nextResponse();
      expect(endpoints.typeUrl).toBe(ENDPOINT);
      expect(stream.responses).toHaveLength(4);
      expect(harness.cp.session(NODE)).toMatchObject({ state: 'serving', revision: served });
      stream.ack(endpoints, ['backend']);

      // A change that matters is: the session generates from the store as it is now, and pushes the new endpoint.
      await harness.cp.apply(backendDataplane('backend-2', 10003));
      const pushed = await stream.nextResponse(5);
      expect(pushed.typeUrl).toBe(ENDPOINT);
      expect(harness.cp.session(NODE)?.revision).toBe(harness.cp.store.projection.revision);
      expect(harness.cp.store.projection.revision).toBeGreaterThan(statuses.revision);
    } finally {
      stream.close();
    }
  });
});
