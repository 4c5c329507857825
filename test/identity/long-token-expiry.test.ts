import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { issueDataplaneToken } from '../../src/identity/index.js';
import { StreamGate, type GateOutcomes } from '../../src/xds/stream-gate.js';
import type { Refusal, StreamAdmission } from '../../src/xds/stream-admission.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import { backendDataplane } from '../support/harness.js';
import { harnessFor } from '../support/harness-for.js';

/**
 * Regression: a stream's expiry timer was armed for the token's whole remaining life, and Node
 * fires a timer whose delay is past 2^31−1 ms (about 24.8 days) after 1 ms instead, so a token
 * issued with `--ttl 30d` ended its stream as soon as it was served.
 */

/** The longest delay Node's `setTimeout` keeps. */
const NODE_MAX_DELAY = 2 ** 31 - 1;
const DAY = 86_400_000;
const START = Date.parse('2026-12-03T12:00:00.000Z');
const NODE = 'secure.backend-1';

/**
 * A simulated clock that keeps Node's timer rule: "when delay is larger than 2147483647 … the
 * delay will be set to 1" (Node's timers documentation), so the overflow shows up on it.
 */
class NodeRuleClock extends SimulatedClock {
  override setTimeout(fn: (...args: unknown[]) => void, timeout: number): number {
    return super.setTimeout(fn, timeout > NODE_MAX_DELAY ? 1 : timeout);
  }
}

describe('a token living longer than Node can wait at once', () => {
  let clock: NodeRuleClock;
  const now = () => START + clock.now();
  const harness = harnessFor(() => ({
    now,
    clock: (clock = new NodeRuleClock()),
    resources: [{ type: 'Mesh', name: 'secure' }, backendDataplane('backend-1', 10001, 'backend', 'secure')],
  }));

  it.each([
    { days: 30, protocol: 'sotw' },
    { days: 365, protocol: 'sotw' },
    { days: 30, protocol: 'delta' },
  ] as const)('keeps a $days-day token serving its $protocol stream until the token expires, then ends it with UNAUTHENTICATED', async ({ days, protocol }) => {
    const ttl = days * DAY;
    const { token } = await issueDataplaneToken(harness.cp.store, { mesh: 'secure', name: 'backend-1', now: now(), ttl });
    const stream = harness.streams.open(protocol, { authorization: `Bearer ${token}` });
    stream.send({ typeUrl: CLUSTER, nodeId: NODE });
    expect((await stream.nextResponse()).typeUrl).toBe(CLUSTER);

    // Past what one Node timer can hold, the stream is still open and its session serving.
    clock.increment(2);
    clock.increment(NODE_MAX_DELAY);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stream.ended).toBeUndefined();
    expect(harness.cp.session(NODE)?.state).toBe('serving');

    // Up to a millisecond before expiry, in steps a day long: still open.
    while (clock.now() + DAY < ttl - 1) clock.increment(DAY);
    clock.increment(ttl - 1 - clock.now());
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stream.ended).toBeUndefined();

    clock.increment(1);
    const end = await stream.ending();
    expect(end.code).toBe(status.UNAUTHENTICATED);
    expect(end.details).toContain(`the token expired at ${new Date(START + ttl).toISOString()}`);
    expect(harness.cp.refusals().recent[0]).toMatchObject({ node: NODE, reason: 'token-expired', protocol });
  });
});

describe('the stream gate on Node’s own timers', () => {
  it('does not end a stream with a 30-day token at once', async () => {
    const expiresAt = Date.now() + 30 * DAY;
    const admission: StreamAdmission = { admit: () => ({ ok: true, authentication: { by: 'token', key: 'k', expiresAt } }), recheck: () => undefined };
    const refusals: Refusal[] = [];
    const admitted: string[] = [];
    const outcomes: GateOutcomes = {
      admitted: (node) => admitted.push(node),
      request: () => {},
      refused: (_node, refusal) => refusals.push(refusal),
      invalid: () => {},
    };
    const gate = new StreamGate({
      admission,
      protocol: 'sotw',
      clock: { setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout) },
      now: Date.now,
      authorization: 'Bearer x',
      outcomes,
    });
    gate.receive({ protocol: 'sotw', typeUrl: CLUSTER, nodeId: NODE, responseNonce: '', versionInfo: '', resourceNames: [] });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(admitted).toEqual([NODE]);
    expect(refusals).toEqual([]);
    expect(gate.admitted).toBe(true);
    gate.shut();
  });
});
