import { beforeEach, describe, expect, it } from 'vitest';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { clientDataplane } from '../support/harness.js';
import { harnessFor } from '../support/harness-for.js';
import { BACKEND, envoyDataplane, getSession, namesOf, sessionIn } from './fixtures.js';

const NODE = 'default.web-1';

const harness = harnessFor({ resources: [BACKEND, envoyDataplane('web-1', { outbound: [] })] });
let stream: AdsStream;
beforeEach(() => {
  stream = harness.streams.sotw();
});

describe('I1 no empty push: a configuration with no resources at all is shown, never pushed', () => {
  it('keeps serving the last configuration and shows the error when the next one would be empty', async () => {
    stream.send({ typeUrl: CLUSTER, nodeId: NODE });
    const clusters = await stream.nextResponse();
    stream.ack(clusters);
    stream.send({ typeUrl: LISTENER });
    const listeners = await stream.nextResponse();
    stream.ack(listeners);
    expect(namesOf(clusters)).toEqual(['localhost:9002']);
    expect(namesOf(listeners)).toEqual(['inbound:127.0.0.1:10002']);

    // The mesh loses its only other service and the node's Dataplane loses everything it had.
    await harness.cp.delete({ type: 'Dataplane', mesh: 'default', name: 'backend-1' });
    await harness.cp.apply(clientDataplane('web-1'));
    harness.watchdog.next();

    const { body } = await getSession(harness, NODE);
    expect(body.state).toBe('serving');
    expect(body.error).toMatchObject({ code: 'CHANCERY_XDS_EMPTY_CONFIGURATION' });
    expect(body.error?.message).toContain(NODE);
    expect(stream.responses).toHaveLength(2);

    // A configuration with resources again is pushed, complete.
    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }] }));
    await stream.nextResponse(4);
    const [cds, lds] = stream.responses.slice(2);
    expect(cds?.typeUrl).toBe(CLUSTER);
    expect(namesOf(cds!)).toEqual(['backend', 'localhost:9002']);
    expect(lds?.typeUrl).toBe(LISTENER);
    expect(namesOf(lds!)).toEqual(['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001']);
    expect((await getSession(harness, NODE)).body.error).toBeUndefined();
  });

  it('answers a node nothing while its configuration has no resources at all', async () => {
    // No service left in the mesh, and the node has no inbound or outbound of its own.
    await harness.cp.delete({ type: 'Dataplane', mesh: 'default', name: 'backend-1' });
    await harness.cp.delete({ type: 'Dataplane', mesh: 'default', name: 'web-1' });
    await harness.cp.apply(clientDataplane('empty-1'));
    stream.send({ typeUrl: LISTENER, nodeId: 'default.empty-1' });
    stream.send({ typeUrl: CLUSTER });
    stream.send({ typeUrl: ENDPOINT, resourceNames: ['backend'] });
    await sessionIn(harness.cp, 'default.empty-1', 'awaiting-snapshot');
    harness.watchdog.next();

    const { body } = await getSession(harness, 'default.empty-1');
    expect(body.state).toBe('awaiting-snapshot');
    expect(body.error?.code).toBe('CHANCERY_XDS_EMPTY_CONFIGURATION');

    expect(stream.responses).toEqual([]);

    await harness.cp.apply(BACKEND);
    await stream.nextResponse(3);
    // Now it has a configuration; its own wildcard LDS and CDS really are empty (it has no
    // inbound or outbound), and that is what it is told, from a generated snapshot.
    expect(stream.responses.map((response) => [response.typeUrl, namesOf(response)])).toEqual([
      [CLUSTER, []],
      [ENDPOINT, ['backend']],
      [LISTENER, []],
    ]);
  });
});
