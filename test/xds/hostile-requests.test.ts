import { status } from '@grpc/grpc-js';
import { Subject } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openEventLog, type EventLog } from '../../src/store/index.js';
import { ResponseEncoder } from '../../src/xds/response-encoder.js';
import { MAX_STATUS_MESSAGE, StreamWriter } from '../../src/xds/stream-writer.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { startHarness, type Harness } from '../support/harness.js';
import { OpenStreams } from '../support/open-streams.js';
import { discoveryRequestBytes, nestedStruct } from '../support/xds-wire.js';
import { BACKEND, envoyDataplane, namesOf } from './fixtures.js';

/**
 * Issue 11's classes of mishandled xDS input, one test each, against a real control plane on
 * the default PGlite store, whose session records (saved to the store every tick) must keep
 * whatever a dataplane sends.
 */
let harness: Harness;
const streams = new OpenStreams(() => harness.xds);
let log: EventLog;
const save = new Subject<void>();
beforeAll(async () => {
  log = await openEventLog('pglite:memory', { instance: 'test' });
  harness = await startHarness({ store: log, recordTicks: save });
  await harness.cp.apply(BACKEND);
  await harness.cp.apply(envoyDataplane('web-1'));
});
afterAll(async () => {
  streams.closeAll();
  await harness.stop();
  await log.close();
});

/** How the stream ends, or `'served'` if it is answered instead: a refusal that did not happen fails at once. */
function outcome(stream: AdsStream): Promise<unknown> {
  return Promise.race([stream.ending(), stream.nextResponse().then(() => 'served')]);
}

describe('issue 11: a refusal is delivered, however large the value it refuses', () => {
  it('ends a stream whose first request has a 100 KB node id with a short RESOURCE_EXHAUSTED', async () => {
    const stream = streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: `default.${'n'.repeat(100_000)}` });
    const end = await stream.ending();
    expect(end).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      details: 'node.id has 100008 characters; at most 256 are accepted, and a <mesh>.<name> has at most 127',
    });
    expect(harness.cp.listSessions().map((session) => session.node)).not.toContain(expect.stringMatching(/^default\.nnnn/));
  });

  it('quotes an invalid node id within the limit cut short', async () => {
    const node = `default.${'N'.repeat(200)}`;
    const stream = streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: node });
    const end = await stream.ending();
    expect(end.code).toBe(status.INVALID_ARGUMENT);
    expect(end.details).toContain(`"${node.slice(0, 64)}…" (208 characters)`);
    expect(end.details.length).toBeLessThan(400);
  });

  it('sends a status message of at most 1,024 characters, the mark of its cut included', () => {
    const sent: Array<{ readonly details: string }> = [];
    const call = { emit: (_event: string, status: { details: string }) => sent.push(status) };
    new StreamWriter(call as unknown as ConstructorParameters<typeof StreamWriter>[0], new ResponseEncoder('test')).end({ code: 'INVALID_ARGUMENT', message: 'x'.repeat(5_000) });
    expect(sent.map(({ details }) => details.length)).toEqual([MAX_STATUS_MESSAGE]);
    expect(sent[0]!.details.endsWith('…')).toBe(true);
  });

  it('quotes a node id a later request changes to cut short, however long: it is not checked against the limits (found by fuzz-xds)', async () => {
    const stream = streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.backend-1' });
    await stream.nextResponse();
    stream.send({ typeUrl: CLUSTER, nodeId: '\u0000'.repeat(3_000) });
    const end = await stream.ending();
    expect(end.code).toBe(status.PERMISSION_DENIED);
    expect(end.details).toMatch(/^node id cannot change on a stream: it opened as default\.backend-1, then sent \u0000{128}… \(node default\.backend-1\)$/);
    // The session's story keeps the reason its stream ended, made storable: the records are saved still.
    save.next();
    await vi.waitFor(async () => {
      const records = await log.sessionRecords.list(60_000);
      const body = records.find((record) => record.node === 'default.backend-1')?.body as { state: string; transitions?: unknown } | undefined;
      expect(body?.state).toBe('disconnected');
    });
    const closed = harness.cp.session('default.backend-1')?.transitions.findLast((step) => step.event === 'stream.closed');
    expect(closed?.detail?.['reason']).toMatch(/then sent \ufffd{128}…/);
  });
});

describe('issue 11: a node.metadata nested 2,000 levels deep', () => {
  it('is refused with RESOURCE_EXHAUSTED naming the depth limit, not INTERNAL', async () => {
    const stream = streams.sotw();
    stream.sendBytes(discoveryRequestBytes({ typeUrl: CLUSTER, nodeId: 'default.web-1', metadata: nestedStruct(2_000) }));
    expect(await outcome(stream)).toEqual({ code: status.RESOURCE_EXHAUSTED, details: 'node.metadata nests deeper than 16 levels' });
  });

  it('leaves the node served on its next stream', async () => {
    const stream = streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1' });
    expect(namesOf(await stream.nextResponse())).toEqual(['backend', 'localhost:9002']);
  });
});

describe('issue 11: what a dataplane sends never stops the session records being saved', () => {
  it('saves a NACK whose message holds a NUL and a lone surrogate, made storable', async () => {
    const stream = streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1' });
    const clusters = await stream.nextResponse();
    stream.send({ typeUrl: CLUSTER, versionInfo: '', responseNonce: clusters.nonce, errorDetail: { code: 3, message: 'bad\u0000cluster \ud800' } });
    // However the wire carried the surrogate, the message kept has neither it nor the NUL.
    const kept = /^bad\ufffdcluster \ufffd+$/;
    await vi.waitFor(() => expect(harness.cp.session('default.web-1')?.types.CDS?.nacked?.message).toMatch(kept));
    save.next();
    await vi.waitFor(async () => {
      const records = await log.sessionRecords.list(60_000);
      const body = records.find((record) => record.node === 'default.web-1')?.body as { types: { CDS: { nacked: { message: string } } } } | undefined;
      expect(body?.types.CDS.nacked.message).toMatch(kept);
    });
  });

  it('refuses a resource name with a NUL: no resource has one, and the records could not keep it', async () => {
    const stream = streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1', resourceNames: ['backend\u0000'] });
    expect(await outcome(stream)).toEqual({
      code: status.INVALID_ARGUMENT,
      details: 'resource_names[0] must not contain control characters; U+0000 is at index 7',
    });
  });
});
