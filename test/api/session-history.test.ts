import { beforeEach, describe, expect, it } from 'vitest';
import type { SessionHistory } from '../../src/api/session-history-routes.js';
import type { TransitionRecord } from '../../src/machines/session-view.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import { runCli } from '../cli/cli-harness.js';
import type { AdsStream } from '../support/ads-client.js';
import { harnessFor } from '../support/harness-for.js';
import { BACKEND, envoyDataplane, sessionIn, settle } from '../xds/fixtures.js';

const NODE = 'default.web-1';
const REJECTED = 'cluster backend: lb_policy RING_HASH needs a hash policy';

const harness = harnessFor({ evictionGrace: 10_000, resources: [BACKEND, envoyDataplane('web-1')] });
let stream: AdsStream;
beforeEach(() => {
  stream = harness.streams.sotw();
});

async function getHistory(node: string): Promise<{ status: number; body: SessionHistory & Record<string, unknown> }> {
  const response = await fetch(`http://${harness.api}/sessions/${encodeURIComponent(node)}/history`);
  return { status: response.status, body: (await response.json()) as SessionHistory & Record<string, unknown> };
}

const steps = (transitions: readonly TransitionRecord[]) => transitions.map(({ event, from, to }) => ({ event, from, to }));

/** Connects as Envoy, is served CDS, NACKs it, then goes away. */
async function scriptedSession() {
  stream.send({ typeUrl: CLUSTER, nodeId: NODE });
  const clusters = await stream.nextResponse();
  stream.send({ typeUrl: CLUSTER, versionInfo: '', responseNonce: clusters.nonce, errorDetail: { code: 3, message: REJECTED } });
  await settle(stream);
  const disconnected = sessionIn(harness.cp, NODE, 'disconnected');
  stream.close();
  await disconnected;
  return clusters;
}

describe('GET /sessions/{node}/history', () => {
  it('shows the exact path a session took through the chart, with the NACK and its message', async () => {
    const clusters = await scriptedSession();

    const { status, body } = await getHistory(NODE);
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(['instance', 'node', 'state', 'transitions']);
    expect(body).toMatchObject({ node: NODE, instance: 'test', state: 'disconnected' });
    expect(steps(body.transitions)).toEqual([
      // Generated within the step that opened the stream: one move, naming what it served.
      { event: 'stream.opened', from: 'connecting', to: 'serving' },
      { event: 'xds.nacked', from: 'serving', to: 'serving' },
      { event: 'stream.closed', from: 'serving', to: 'disconnected' },
    ]);
    const [opened, nacked, closed] = body.transitions;
    expect(opened?.detail).toEqual({
      stream: expect.any(String),
      peer: expect.any(String),
      protocol: 'sotw',
      typeUrl: CLUSTER,
      revision: harness.cp.store.projection.revision,
      resources: expect.any(Number),
    });
    expect(opened?.detail?.resources).toBeGreaterThan(0);
    expect(nacked?.detail).toEqual({ typeUrl: CLUSTER, version: clusters.versionInfo, nonce: clusters.nonce, message: REJECTED });
    expect(closed?.detail?.stream).toBe(opened?.detail?.stream);
    const times = body.transitions.map((transition) => Date.parse(transition.at));
    expect(times.every((time, index) => Number.isFinite(time) && time >= (times[index - 1] ?? 0))).toBe(true);
  });

  it('ends the story with eviction once the grace passes, after which the node has no session here', async () => {
    await scriptedSession();
    const evicted = sessionIn(harness.cp, NODE, 'evicted');
    harness.clock.increment(10_000);
    const last = await evicted;

    expect(steps(last.transitions).slice(-2)).toEqual([
      { event: 'stream.closed', from: 'serving', to: 'disconnected' },
      { event: 'xstate.after.evictionGrace.disconnected', from: 'disconnected', to: 'evicted' },
    ]);
    const { status, body } = await getHistory(NODE);
    expect(status).toBe(404);
    expect(body).toMatchObject({ code: 'CHANCERY_API_SESSION_NOT_FOUND', field: 'node' });
  });

  it('continues on the node’s next stream, which names the version it already holds', async () => {
    const clusters = await scriptedSession();
    const again = harness.streams.sotw();
    try {
      const serving = sessionIn(harness.cp, NODE, 'serving');
      again.send({ typeUrl: CLUSTER, nodeId: NODE, versionInfo: clusters.versionInfo });
      await serving;
      const { body } = await getHistory(NODE);
      // Holding configuration, it is answered only once the store was read to the log's end.
      expect(steps(body.transitions).slice(-3)).toEqual([
        { event: 'stream.closed', from: 'serving', to: 'disconnected' },
        { event: 'stream.opened', from: 'disconnected', to: 'catching-up' },
        { event: 'store.caughtUp', from: 'catching-up', to: 'serving' },
      ]);
      expect(body.transitions.at(-2)?.detail).toMatchObject({ typeUrl: CLUSTER, version: clusters.versionInfo });
      expect(body.transitions.at(-1)?.detail).toEqual({ revision: harness.cp.store.projection.revision, resources: expect.any(Number) });
    } finally {
      again.close();
    }
  });

  it('tells a Delta stream by its protocol, and how many resources the node held when it opened', async () => {
    stream.close();
    const first = harness.streams.delta();
    const disconnected = sessionIn(harness.cp, NODE, 'disconnected');
    first.send({ typeUrl: CLUSTER, nodeId: NODE });
    const clusters = await first.nextResponse();
    first.ack(clusters);
    first.close();
    await disconnected;
    const again = harness.streams.delta();
    try {
      const serving = sessionIn(harness.cp, NODE, 'serving');
      again.send({ typeUrl: CLUSTER, nodeId: NODE, initialVersions: Object.fromEntries(clusters.resources.map((r) => [r.name, r.version])) });
      await serving;
      const { body } = await getHistory(NODE);
      const opened = body.transitions.filter((t) => t.event === 'stream.opened');
      const opening = { stream: expect.any(String), peer: expect.any(String), protocol: 'delta', typeUrl: CLUSTER };
      // The first stream held nothing; the second named both clusters, so the store was read to its end first.
      expect(opened.map((t) => [t.to, t.detail])).toEqual([
        ['serving', { ...opening, revision: expect.any(Number), resources: expect.any(Number) }],
        ['catching-up', { ...opening, holds: 2 }],
      ]);
      expect(opened[1]?.detail?.stream).not.toBe(opened[0]?.detail?.stream);
    } finally {
      again.close();
    }
  });

  it('is what chancery inspect NODE prints as a timeline, NACK message included', async () => {
    await scriptedSession();
    const { code, stdout } = await runCli(['inspect', NODE], { env: { CHANCERY_API_ADDRESS: harness.api } });
    expect(code).toBe(0);
    const timeline = stdout.slice(stdout.indexOf('Transitions (oldest first):')).split('\n').slice(1, 4);
    expect(timeline.map((line) => line.split(/ {2}/).slice(2, 4))).toEqual([
      ['connecting → serving', 'on stream.opened'],
      ['serving', 'on xds.nacked'],
      ['serving → disconnected', 'on stream.closed'],
    ]);
    expect(timeline[1]).toContain(`message=${REJECTED}`);
  });

  it('answers 404 naming the node when it has no session here', async () => {
    const { status, body } = await getHistory('default.nobody');
    expect(status).toBe(404);
    expect(body).toMatchObject({ code: 'CHANCERY_API_SESSION_NOT_FOUND', field: 'node' });
    expect(body.reason).toContain('default.nobody');
  });
});
