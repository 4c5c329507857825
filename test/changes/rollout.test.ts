import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeRollout, type RolloutAnswer, type SessionProgress } from '../../src/changes/index.js';
import type { DecodedResponse } from '../../src/xds/decode.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import { runCli } from '../cli/cli-harness.js';
import { AdsStream } from '../support/ads-client.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { envoyDataplane, sessionIn } from '../xds/fixtures.js';

const sent = (nonce: string) => ({ version: `v${nonce}`, nonce, resources: 1, at: '2030-01-01T00:00:00.000Z' });
const answered = (nonce: string, at = '2030-01-01T00:00:01.000Z') => ({ version: `v${nonce}`, nonce, at });
const session = (overrides: Partial<SessionProgress>): SessionProgress => ({ node: 'default.web-1', state: 'serving', instance: 'cp-1', revision: 5, types: {}, ...overrides });
const CDS = { typeUrl: CLUSTER, subscription: { wildcard: true, names: [] } };

describe('where a node is with a revision', () => {
  it.each<[string, readonly SessionProgress[], object]>([
    ['no session anywhere: not connected', [], { status: 'not-connected' }],
    ['serving it, every type ACKed', [session({ types: { CDS: { ...CDS, sent: sent('2'), acked: answered('2') } } })], { status: 'acked', at: '2030-01-01T00:00:01.000Z' }],
    ['serving a later revision', [session({ revision: 9, types: { CDS: { ...CDS, sent: sent('2'), acked: answered('2') } } })], { status: 'acked' }],
    ['serving it, a type NACKed', [session({ types: { CDS: { ...CDS, sent: sent('2'), acked: answered('1'), nacked: { ...answered('2'), message: 'bad cluster' } } } })], { status: 'nacked', type: 'CDS', message: 'bad cluster' }],
    ['serving it, sent and not answered yet', [session({ types: { CDS: { ...CDS, sent: sent('2'), acked: answered('1') } } })], { status: 'pending', reason: 'unacked' }],
    ['serving an older revision', [session({ revision: 4, types: { CDS: { ...CDS, sent: sent('2'), acked: answered('2') } } })], { status: 'pending', reason: 'behind' }],
    ['disconnected', [session({ state: 'disconnected', revision: undefined })], { status: 'pending', reason: 'disconnected', instance: 'cp-1' }],
    ['gone from one instance, ACKed on another', [session({ state: 'disconnected', revision: undefined }), session({ instance: 'cp-2', types: { CDS: { ...CDS, sent: sent('7'), acked: answered('7') } } })], { status: 'acked', instance: 'cp-2' }],
  ])('%s', (_what, sessions, expected) => {
    expect(nodeRollout('default.web-1', 5, sessions)).toMatchObject(expected);
  });
});

let harness: Harness;
const streams: AdsStream[] = [];
beforeEach(async () => {
  harness = await startHarness();
  await harness.cp.apply(backendDataplane('backend-1', 10001));
  await harness.cp.apply(envoyDataplane('web-1'));
});
afterEach(async () => {
  for (const stream of streams.splice(0)) stream.close();
  await harness.stop();
});

/** web-1's Envoy, ACKing every response, or NACKing the EDS ones while `refuse` says so. */
async function connectWeb(refuse: { eds: boolean } = { eds: false }): Promise<AdsStream> {
  const stream = AdsStream.open(harness.xds);
  streams.push(stream);
  const names: Record<string, string[]> = { [ENDPOINT]: ['backend'] };
  stream.onResponse((response: DecodedResponse) => {
    const resourceNames = names[response.typeUrl] ?? [];
    if (response.typeUrl === ENDPOINT && refuse.eds) {
      stream.send({ typeUrl: ENDPOINT, versionInfo: '', responseNonce: response.nonce, resourceNames, errorDetail: { code: 3, message: 'endpoint refused by the test' } });
    } else stream.ack(response, resourceNames);
  });
  stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1' });
  stream.send({ typeUrl: ENDPOINT, resourceNames: ['backend'] });
  stream.send({ typeUrl: LISTENER });
  await stream.until(() => new Set(stream.responses.map((response) => response.typeUrl)).size === 3, 'CDS, EDS and LDS');
  return stream;
}

const cli = (args: readonly string[], stdin?: string) => runCli(args, { env: { CHANCERY_API_ADDRESS: harness.api }, ...(stdin !== undefined && { stdin }) });
const backend = (name: string, port: number) => `type: Dataplane\nname: ${name}\nnetworking: { address: 127.0.0.1, inbound: [{ port: ${port}, tags: { service: backend } }] }\n`;

describe('apply --wait and rollout status', () => {
  it('waits until every connected node the write changed has ACKed, and the rollout says so', async () => {
    await connectWeb();
    const { code, stdout } = await cli(['apply', '--wait', '-f', '-'], backend('backend-2', 10003));
    expect(code).toBe(0);
    expect(stdout).toContain('Dataplane default/backend-2 created\n');
    expect(stdout).toMatch(/AFFECTED {3}ACKED {3}NACKED {3}PENDING {3}NOT CONNECTED\n2 {10}1 {7}0 {8}0 {9}1\n/);
    expect(stdout).toMatch(/Complete: the last ACK at /);
    const revision = harness.cp.store.projection.revision;
    const answer = (await (await fetch(`http://${harness.api}/revisions/${revision}`)).json()) as RolloutAnswer;
    expect(answer).toMatchObject({ revision, since: revision - 1, scope: 'local', complete: true, nodes: { affected: 2, acked: 1, notConnected: 1 }, write: { events: 1, resources: [{ name: 'backend-2', kind: 'upserted' }] } });
    expect((await cli(['rollout', 'status', String(revision)])).code).toBe(0);
    const metrics = await harness.cp.metrics.text();
    expect(metrics).toMatch(/^chancery_write_rollout_seconds_count 1$/m);
  });

  it('exits 1 naming the node and its message when the node NACKs', async () => {
    const refuse = { eds: false };
    await connectWeb(refuse);
    refuse.eds = true;
    const { code, stdout, stderr } = await cli(['apply', '--wait', '-f', '-'], backend('backend-2', 10003));
    expect(code).toBe(1);
    expect(stdout).toContain('NACKed (EDS) by 1 node: endpoint refused by the test\n  default.web-1\n');
    expect(stderr).toContain('Refused by some nodes (NACK)');
  });

  it('reports a disconnected node as pending until the timeout, and exits 1', async () => {
    const stream = await connectWeb();
    stream.close();
    await sessionIn(harness.cp, 'default.web-1', 'disconnected');
    const { code, stdout, stderr } = await cli(['delete', 'dp', 'backend-1', '--wait', '--timeout', '300ms']);
    expect(code).toBe(1);
    expect(stdout).toContain('Pending: default.web-1 (disconnected, on test)\n');
    expect(stderr).toContain('Timed out after 0.3s with nodes pending');
  });

  it('follows, by default, the whole write that made the revision, however many events it has', async () => {
    const from = harness.cp.store.projection.revision;
    expect((await cli(['apply', '--fail-on-warnings', '-f', '-'], `${backend('backend-2', 10003)}---\n${backend('backend-3', 10004)}`)).code).toBe(0);
    const revision = harness.cp.store.projection.revision;
    const answer = (await (await fetch(`http://${harness.api}/revisions/${revision}`)).json()) as RolloutAnswer;
    expect(answer).toMatchObject({ revision: from + 2, since: from, write: { events: 2 }, nodes: { affected: 3, notConnected: 3 } });
  });

  it('refuses a since not below the revision, and a revision not reached', async () => {
    const revision = harness.cp.store.projection.revision;
    const since = await fetch(`http://${harness.api}/revisions/${revision}?since=${revision}`);
    expect(since.status).toBe(400);
    expect(await since.json()).toMatchObject({ code: 'CHANCERY_CHANGES_INVALID_SINCE', field: 'since' });
    expect((await fetch(`http://${harness.api}/revisions/${revision + 5}`)).status).toBe(400);
    expect((await fetch(`http://${harness.api}/revisions/abc`)).status).toBe(400);
  });
});
