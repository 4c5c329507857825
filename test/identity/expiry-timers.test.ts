import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { issueDataplaneToken } from '../../src/identity/index.js';
import { CLUSTER } from '../../src/xds/index.js';
import type { AdsStream, DeltaStream } from '../support/ads-client.js';
import { backendDataplane } from '../support/harness.js';
import { harnessFor } from '../support/harness-for.js';
import { TimerCountingClock } from '../support/timer-counting-clock.js';
import { eventually } from '../support/traffic.js';

/**
 * I3 for the timers a token arms: a token-authenticated stream is ended when its token expires,
 * by a timer on the control plane's clock; once the stream has ended, however it ended, that
 * timer is gone too. A timer left behind keeps the stream's gate, and what it reaches, alive
 * for the token's remaining life, and no table the control plane counts shows it.
 */

const NODE = 'secure.backend-1';
const TTL = 3_600_000;
const GRACE = 10_000;

type Stream = AdsStream | DeltaStream;

let clock: TimerCountingClock;
const harness = harnessFor(() => ({
  clock: (clock = new TimerCountingClock()),
  evictionGrace: GRACE,
  resources: [{ type: 'Mesh', name: 'secure' }, backendDataplane('backend-1', 10001, 'backend', 'secure')],
}));

/** A stream of `protocol` for NODE with a fresh token, served its first response. */
async function served(protocol: 'sotw' | 'delta'): Promise<Stream> {
  const { token } = await issueDataplaneToken(harness.cp.store, { mesh: 'secure', name: 'backend-1', now: Date.now(), ttl: TTL });
  const authorization = `Bearer ${token}`;
  const stream = harness.streams.open(protocol, { authorization });
  stream.send({ typeUrl: CLUSTER, nodeId: NODE });
  expect((await stream.nextResponse()).typeUrl).toBe(CLUSTER);
  return stream;
}

/** The token's expiry timer: the one pending timer armed for (about) the token's life. */
const expiryTimers = () => clock.pendingDelays().filter((delay) => delay > GRACE && delay <= TTL);

/** Waits until the server holds no stream and no gate, lets the node's session be evicted, and answers the timers still pending. */
async function pendingOnceAllEnded(): Promise<number[]> {
  await eventually('stream and gate let go', () => {
    const { streams: open, gates } = harness.cp.sizes();
    return open === 0 && gates === 0 && harness.cp.session(NODE)?.state !== 'serving';
  });
  clock.increment(GRACE);
  expect(harness.cp.sizes().sessions).toBe(0);
  return clock.pendingDelays();
}

describe('I3: a token-authenticated stream that ended leaves no expiry timer', () => {
  it.each(['sotw', 'delta'] as const)('arms one expiry timer while a %s stream is open, and clears it when the client cancels', async (protocol) => {
    const stream = await served(protocol);
    expect(expiryTimers()).toHaveLength(1);
    stream.cancel();
    expect(await pendingOnceAllEnded()).toEqual([]);
  });

  it('clears the expiry timer of a stream a newer stream of its node supersedes', async () => {
    const older = await served('sotw');
    const newer = await served('sotw');
    expect((await older.ending()).code).toBe(status.ABORTED);
    await eventually('the superseded stream’s gate let go', () => harness.cp.sizes().gates === 1);
    expect(expiryTimers()).toHaveLength(1);
    newer.cancel();
    expect(await pendingOnceAllEnded()).toEqual([]);
  });

  it('clears the expiry timer of a stream the server ends for what it sent', async () => {
    const stream = await served('sotw');
    stream.send({ typeUrl: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig' });
    expect((await stream.ending()).code).toBe(status.INVALID_ARGUMENT);
    expect(await pendingOnceAllEnded()).toEqual([]);
  });

  it('clears the expiry timer of a stream refused for switching node id', async () => {
    const stream = await served('delta');
    stream.send({ typeUrl: CLUSTER, nodeId: 'secure.someone-else' });
    expect((await stream.ending()).code).toBe(status.PERMISSION_DENIED);
    expect(await pendingOnceAllEnded()).toEqual([]);
  });

  it('clears every expiry timer when the control plane stops', async () => {
    const stream = await served('sotw');
    await harness.stop();
    expect((await stream.ending()).code).toBe(status.UNAVAILABLE);
    expect(clock.pendingDelays()).toEqual([]);
  });
});
