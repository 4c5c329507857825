import { describe, expect, it } from 'vitest';
import type { SessionView } from '../../src/machines/index.js';
import { CLUSTER } from '../../src/xds/index.js';
import { harnessFor } from '../support/harness-for.js';
import { viewAfterRequests } from '../support/request-barrier.js';
import { eventually } from '../support/traffic.js';
import { BACKEND, envoyDataplane, sessionIn } from './fixtures.js';

/**
 * I2 measured without waiting for a timeout: the watchdog never ticks here (the harness's is
 * driven by hand), so a first request the chart leaves for a tick is never answered. Rather than
 * wait for an answer that may never come, each test asks whether the answer was sent by the time
 * the session handled the stream's next request; a session that waits for a tick, or failed on
 * the way, shows at once.
 */

const NODE = 'default.web-1';

const harness = harnessFor({ resources: [BACKEND, envoyDataplane('web-1')] });


/** The session serves, and sent CDS, by the time it handled the request after the first. */
function expectServedAtOnce(view: SessionView | undefined): void {
  const seen = view === undefined ? 'no session' : `${view.state}${view.step ? `/${view.step}` : ''}, CDS sent: ${view.types['CDS']?.sent !== undefined}`;
  expect(seen, 'the session when it handled the request after the first (I2: no tick has come, none is needed)').toBe('serving, CDS sent: true');
}

describe('I2 no waiting for a tick: a stream’s first request is answered before its next one is handled', () => {
  it.each(['sotw', 'delta'] as const)('answers a new node’s first %s request', async (protocol) => {
    const stream = harness.streams.open(protocol);
    stream.send({ typeUrl: CLUSTER, nodeId: NODE });
    expectServedAtOnce(await viewAfterRequests(harness.cp, NODE, stream));
    expect((await stream.nextResponse(1)).typeUrl).toBe(CLUSTER);
  });

  it.each(['sotw', 'delta'] as const)('answers a node back on a new %s stream after its last one closed', async (protocol) => {
    const first = harness.streams.open(protocol);
    first.send({ typeUrl: CLUSTER, nodeId: NODE });
    expectServedAtOnce(await viewAfterRequests(harness.cp, NODE, first));
    await first.nextResponse(1);
    first.close();
    await sessionIn(harness.cp, NODE, 'disconnected');

    const again = harness.streams.open(protocol);
    again.send({ typeUrl: CLUSTER, nodeId: NODE });
    expectServedAtOnce(await viewAfterRequests(harness.cp, NODE, again));
    expect((await again.nextResponse(1)).typeUrl).toBe(CLUSTER);
  });

  it('answers a node back holding an older configuration as soon as the store has been read to its end', async () => {
    const first = harness.streams.sotw();
    first.send({ typeUrl: CLUSTER, nodeId: NODE });
    expectServedAtOnce(await viewAfterRequests(harness.cp, NODE, first));
    const held = await first.nextResponse(1);
    first.ack(held);
    first.close();
    await sessionIn(harness.cp, NODE, 'disconnected');
    await harness.cp.apply(envoyDataplane('web-1', { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] }));

    const again = harness.streams.sotw();
    // It says what it holds: the session reads the store to its end before generating.
    again.send({ typeUrl: CLUSTER, nodeId: NODE, versionInfo: held.versionInfo });
    await eventually('the session past its catch-up', () => harness.cp.session(NODE)?.step !== 'catching-up');
    expectServedAtOnce(await viewAfterRequests(harness.cp, NODE, again));
    const clusters = await again.nextResponse(1);
    expect(clusters.versionInfo).not.toBe(held.versionInfo);
  });
});
