import type { Subscription } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionState } from '../../src/index.js';
import { type EchoBackend, type EchoClient, startEchoBackend } from '../support/echo-backend.js';
import { backendDataplane, clientDataplane, type Harness, startHarness } from '../support/harness.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually, pause, RPC_DEADLINE_MS, tally, Traffic } from '../support/traffic.js';
import { createXdsEchoClient } from '../support/xds-client.js';
import { runCli } from '../cli/cli-harness.js';
import { budget } from '../support/budget.js';

/**
 * Real proxyless gRPC clients (`@grpc/grpc-js-xds`, `xds:///<service>`) configured by a real
 * Chancery, making real unary RPCs to real grpc-js backends, all on 127.0.0.1. No assertion
 * depends on timing: every wait is a condition re-checked after each RPC (or a short pause),
 * with a bounded number of attempts, and every RPC has a deadline. The watchdog never ticks,
 * so everything the clients get is pushed on connect or on a store change (I2).
 */

const NODE = 'default.client';

let harness: Harness;
const cleanups: Array<() => unknown> = [];

beforeEach(async () => {
  harness = await startHarness();
  await harness.cp.apply(clientDataplane('client'));
});

afterEach(async () => {
  // Clients first (they would otherwise reconnect), then proxies and backends, then Chancery.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await harness.stop();
});

async function backend(name: string): Promise<EchoBackend> {
  const started = await startEchoBackend(name);
  cleanups.push(() => started.stop());
  return started;
}

async function proxy(target: string): Promise<TcpProxy> {
  const started = await startTcpProxy([target]);
  cleanups.push(() => started.close());
  return started;
}

function xdsClient(service: string, xdsServer = harness.xds): EchoClient {
  const client = createXdsEchoClient({ service, xdsServer, nodeId: NODE });
  cleanups.push(() => client.close());
  return client;
}

const register = (b: EchoBackend, service = 'backend') => harness.cp.apply(backendDataplane(b.name, b.port, service));
const deregister = (name: string) => harness.cp.delete({ type: 'Dataplane', mesh: 'default', name });

/** The names of what Chancery last sent the client node of one type, on its current stream. */
function lastSentNames(type: 'LDS' | 'RDS' | 'CDS' | 'EDS'): string[] {
  const sent = harness.cp.lastSent(NODE)?.[type];
  return (sent?.resources ?? []).map((resource) => {
    const { name, cluster_name: clusterName } = resource as { name?: string; cluster_name?: string };
    return name ?? clusterName ?? '?';
  });
}

describe('a proxyless gRPC client (grpc-js-xds) configured by Chancery', { timeout: budget(60_000) }, () => {
  it('sends real unary RPCs to xds:///backend and has them answered by both backends, round robin', async () => {
    const [one, two] = await Promise.all([backend('backend-1'), backend('backend-2')]);
    await register(one);
    await register(two);
    const traffic = new Traffic(xdsClient('backend'));

    // Until both subchannels are ready, round robin has only one to pick.
    await traffic.until('RPC served by each backend', () => new Set(traffic.servedBy).size === 2);
    const served = await traffic.calls(10);

    expect(tally(served)).toEqual({ 'backend-1': 5, 'backend-2': 5 });
    expect(traffic.failures).toEqual([]);
    expect(one.served + two.served).toBe(traffic.servedBy.length);
  });

  it('is served when started from the bootstrap chancery bootstrap grpc prints for its Dataplane', async () => {
    const one = await backend('backend-1');
    await register(one);
    const printed = await runCli(['bootstrap', 'grpc', '--node', NODE, '--api-address', harness.api]);
    expect(printed.code, printed.stderr).toBe(0);
    const client = createXdsEchoClient({ service: 'backend', bootstrap: printed.stdout });
    cleanups.push(() => client.close());

    expect((await client.echo(RPC_DEADLINE_MS)).servedBy).toBe('backend-1');
    expect(harness.cp.session(NODE)?.state).toBe('serving');
  });

  it('moves RPCs to where the backend Dataplanes are as they are added and removed, with no RPC failing', async () => {
    const [one, two] = await Promise.all([backend('backend-1'), backend('backend-2')]);
    await register(one);
    const traffic = new Traffic(xdsClient('backend'));

    // backend-2 is running but not registered: nothing can send it traffic.
    expect(tally(await traffic.calls(20))).toEqual({ 'backend-1': 20 });

    await register(two);
    await traffic.until('RPC reaching backend-2 after it was applied', ([last]) => last === 'backend-2');

    await deregister('backend-1');
    await traffic.until('convergence on backend-2', (recent) => recent.every((name) => name === 'backend-2'), {
      window: 20,
    });
    const servedBefore = one.served;
    expect(tally(await traffic.calls(20))).toEqual({ 'backend-2': 20 });
    // backend-1 is still up: only the configuration keeps it from being called.
    expect(one.served).toBe(servedBefore);
    expect(traffic.failures).toEqual([]);
  });

  it('keeps every RPC succeeding while its xDS connection is cut again and again', async () => {
    // grpc-js-xds 1.14.1 never resets its ADS stream backoff after a response (see
    // XdsSingleServerClient.onAdsStreamReceivedMessage: defined, never called), so reconnect k
    // waits about 1.6^k s: 5 cuts take ~16 s of the client's own backoff, 10 would take ~3 min.
    const CUTS = 5;
    const BATCH = 30;
    /** RPCs while the client is cut off and backing off, each followed by a short breather. */
    const OUTAGE_ATTEMPTS = 400;
    const [one, two] = await Promise.all([backend('backend-1'), backend('backend-2')]);
    await register(one);
    await register(two);
    const front = await proxy(harness.xds);
    const traffic = new Traffic(xdsClient('backend', front.address));

    const states: SessionState[] = [];
    const watching: Subscription = harness.cp.sessions.subscribe((view) => {
      if (view.node === NODE) states.push(view.state);
    });
    cleanups.push(() => watching.unsubscribe());

    const servingOn = () => {
      const session = harness.cp.session(NODE);
      return session?.state === 'serving' ? session.stream?.id : undefined;
    };
    const streams: Array<{ stream: string; lds: string[]; cds: string[]; eds: string[] }> = [];
    /** Waits, making RPCs, until the node is served on a stream not seen before, and records what that stream was sent. */
    const servedAgain = async (what: string) => {
      const seen = new Set(streams.map(({ stream }) => stream));
      const everyTypeSent = () => (['LDS', 'RDS', 'CDS', 'EDS'] as const).every((type) => lastSentNames(type).length > 0);
      await traffic.until(what, () => servingOn() !== undefined && !seen.has(servingOn()!) && everyTypeSent(), {
        attempts: OUTAGE_ATTEMPTS,
        pauseMs: 50,
      });
      streams.push({ stream: servingOn()!, lds: lastSentNames('LDS'), cds: lastSentNames('CDS'), eds: lastSentNames('EDS') });
    };
    /** Two workers make BATCH RPCs between them; `atHalf` runs once half of them have completed, with the rest in flight. */
    const batch = async (atHalf: () => void) => {
      const target = traffic.completed + BATCH;
      const half = traffic.completed + BATCH / 2;
      let fired = false;
      let inFlight = 0;
      const worker = async () => {
        while (traffic.completed + inFlight < target) {
          inFlight += 1;
          await traffic.call();
          inFlight -= 1;
          if (!fired && traffic.completed >= half) {
            fired = true;
            atHalf();
          }
        }
      };
      await Promise.all([worker(), worker()]);
    };

    await servedAgain('first stream served');
    for (let cut = 1; cut <= CUTS; cut++) {
      // The cut lands in the middle of a batch of RPCs; the rest of the batch runs cut off.
      await batch(() => front.cutAll());
      await servedAgain(`reconnect after cut ${cut}`);
    }
    await batch(() => undefined);

    expect(traffic.failures).toEqual([]);
    expect(traffic.completed).toBeGreaterThanOrEqual((CUTS + 1) * BATCH);
    expect(front.cuts).toBe(CUTS);
    expect(front.connections).toBeGreaterThan(CUTS);

    // Every stream the client opened was sent the listener, cluster and endpoints it asked for.
    expect(new Set(streams.map(({ stream }) => stream)).size).toBe(CUTS + 1);
    for (const sent of streams) expect(sent).toMatchObject({ lds: ['backend'], cds: ['backend'], eds: ['backend'] });

    // Chancery saw each cut as a disconnect, and each reconnect was re-served from a fresh snapshot.
    const path = states.filter((state, i) => i === 0 || state !== states[i - 1]);
    const cycle: SessionState[] = ['disconnected', 'awaiting-snapshot', 'serving'];
    // A first stream is served within the step that opens it; a reconnect naming versions waits for the store to be read first.
    expect(path).toEqual(['serving', ...Array.from({ length: CUTS }, () => cycle).flat()]);

    const session = harness.cp.session(NODE)!;
    expect(session.state).toBe('serving');
    expect(session.stream?.id).toBe(streams.at(-1)?.stream);
    for (const type of ['LDS', 'CDS'] as const) {
      expect(session.types[type]?.subscription).toEqual({ wildcard: false, names: ['backend'] });
      expect(session.types[type]?.nacked).toBeUndefined();
    }
    expect(session.transitions.some((t) => t.event === 'xds.nacked')).toBe(false);

    // The HTTP API tells an operator the same story.
    const response = await fetch(`http://${harness.api}/sessions/${NODE}`);
    const view = (await response.json()) as { state: string; transitions: Array<{ from: string; to: string }> };
    expect(view.state).toBe('serving');
    // It holds configuration when it comes back, so the store is read to its end before it is answered.
    expect(view.transitions.slice(-3).map(({ from, to }) => `${from}->${to}`)).toEqual(['serving->disconnected', 'disconnected->catching-up', 'catching-up->serving']);
  });

  it('is answered once a Dataplane of the service it asked for is applied, though the service did not exist when it asked', async () => {
    const [one, later] = await Promise.all([backend('backend-1'), backend('later-1')]);
    await register(one);
    const client = xdsClient('later');

    // The RPC starts before the service exists: it waits for name resolution, within its deadline.
    const reply = client.echo(RPC_DEADLINE_MS);
    await eventually('the client to subscribe to listener "later"', () =>
      harness.cp.session(NODE)?.types.LDS?.subscription.names.includes('later') === true,
    );
    await eventually('the client session to serve', () => harness.cp.session(NODE)?.state === 'serving');
    // Nothing is sent for a name that does not exist: an LDS without it would delete it.
    expect(harness.cp.lastSent(NODE)?.LDS).toBeUndefined();

    await register(later, 'later');

    await expect(reply).resolves.toEqual({ servedBy: 'later-1' });
    expect(lastSentNames('LDS')).toEqual(['later']);
    expect(one.served).toBe(0);
  });
});
