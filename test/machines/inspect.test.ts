import diagnostics from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { createWebSocketReceiver, type StatelyInspectionEvent } from '@statelyai/inspect';
import { createInspectorServer } from '@statelyai/inspect/server';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { controlPlaneOptionsOf, resolveOptions, RUN_OPTIONS, UsageError } from '../../src/cli/index.js';
import { parseNodePattern } from '../../src/inspector/index.js';
import type { SessionView } from '../../src/machines/session-view.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import { OpenStreams } from '../support/open-streams.js';
import { runCli } from '../cli/cli-harness.js';
import { startHarness, type Harness } from '../support/harness.js';
import { freePort } from '../support/ports.js';
import { BACKEND, envoyDataplane, sessionIn } from '../xds/fixtures.js';

const CHOSEN = 'default.web-1';
const OTHER = 'default.backend-1';


/**
 * Subscribes to the relay like Stately's inspector page does, and records every event. The
 * receiver offers no way to close its socket, so the socket is caught as it is created and
 * destroyed at the end: nothing may keep the test process alive.
 */
function receive(url: string): { readonly events: StatelyInspectionEvent[]; until(what: string, done: () => boolean): Promise<void>; close(): void } {
  const events: StatelyInspectionEvent[] = [];
  const waiters: Array<() => void> = [];
  const sockets: Socket[] = [];
  const catchSocket = (message: unknown) => sockets.push((message as { socket: Socket }).socket);
  diagnostics.subscribe('net.client.socket', catchSocket);
  try {
    createWebSocketReceiver({ server: url }).subscribe((event) => {
      events.push(event);
      for (const wake of waiters.splice(0)) wake();
    });
  } finally {
    diagnostics.unsubscribe('net.client.socket', catchSocket);
  }
  return {
    events,
    async until(what, done) {
      // Bounded by vitest's timeout; `what` names what never came.
      while (!done()) await new Promise<void>((resolve) => waiters.push(resolve));
      expect(done(), what).toBe(true);
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** The node each inspected actor belongs to, from its `@xstate.actor` event (its context is the session's view). */
function nodesBySession(events: readonly StatelyInspectionEvent[]): Map<string, string> {
  const nodes = new Map<string, string>();
  for (const event of events) {
    if (event.type === '@xstate.actor') nodes.set(event.sessionId, (event.snapshot.context as SessionView).node);
  }
  return nodes;
}

function snapshotsOf(events: readonly StatelyInspectionEvent[]): { value: unknown; context: SessionView }[] {
  return events.flatMap((event) => (event.type === '@xstate.snapshot' ? [event.snapshot as unknown as { value: unknown; context: SessionView }] : []));
}

/** The chart state each snapshot rests in, as the session's view names it. */
function statesOf(events: readonly StatelyInspectionEvent[]): string[] {
  return snapshotsOf(events).map(({ context }) => context.step ?? context.state);
}

describe('live inspection in the Stately inspector', () => {
  let relay: { stop(): void };
  let receiver: ReturnType<typeof receive>;
  let harness: Harness | undefined;
  const streams = new OpenStreams(() => harness!.xds);
  beforeEach(async () => {
    const port = await freePort();
    relay = createInspectorServer({ port, autoOpen: false });
    receiver = receive(`ws://127.0.0.1:${port}`);
    harness = await startHarness({ inspect: { url: `ws://127.0.0.1:${port}`, nodes: parseNodePattern('default.web-*') } });
  });
  afterEach(async () => {
    streams.closeAll();
    await harness?.stop();
    receiver.close();
    relay.stop();
  });

  async function serve(node: string): Promise<void> {
    const stream = streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: node });
    await stream.nextResponse();
  }

  it("sends the chosen node's session, its events and snapshots, and nothing of any other session", async () => {
    await harness!.cp.apply(BACKEND);
    await harness!.cp.apply(envoyDataplane('web-1'));
    // The other node first: the inspector's events travel in order, so once the chosen node is
    // seen serving, anything sent for the other would have arrived before it.
    await serve(OTHER);
    await sessionIn(harness!.cp, OTHER, 'serving');
    await serve(CHOSEN);
    await receiver.until(`${CHOSEN} serving`, () => snapshotsOf(receiver.events).some((s) => s.context.node === CHOSEN && s.context.state === 'serving'));

    const nodes = nodesBySession(receiver.events);
    expect([...nodes.values()]).toEqual([CHOSEN]);
    for (const event of receiver.events) expect(nodes.get(event.sessionId), event.type).toBe(CHOSEN);
    // Generated within the step that opened the stream: the inspector sees no rest in between.
    expect(statesOf(receiver.events)).toEqual(['connecting', 'serving']);
    // The inspector gets the machine's own value, so it draws the nested chart.
    expect(snapshotsOf(receiver.events).at(-1)?.value).toEqual({ streaming: 'serving' });
    const sent = receiver.events.flatMap((event) => (event.type === '@xstate.event' ? [event.event] : []));
    expect(sent.map((event) => event.type)).toEqual(['xstate.init', 'stream.opened']);
    // An event is sent without the reader it carries; what was served is the snapshot's view: its revision, not its encoded resources.
    expect(Object.keys(sent[1]!).sort()).toEqual(['at', 'request', 'stream', 'type']);
    const served = snapshotsOf(receiver.events).at(-1)!.context;
    expect(served).toMatchObject({ node: CHOSEN, state: 'serving', revision: harness!.cp.session(CHOSEN)?.revision });
  });

  it("sends the chosen session's last steps on shutdown", async () => {
    await harness!.cp.apply(BACKEND);
    await harness!.cp.apply(envoyDataplane('web-1'));
    await serve(CHOSEN);
    await harness!.stop();
    harness = undefined;
    await receiver.until(`${CHOSEN} evicted`, () => snapshotsOf(receiver.events).some((s) => s.value === 'evicted'));
    expect(statesOf(receiver.events)).toEqual(['connecting', 'serving', 'evicted']);
  });
});

describe('chancery run --inspect', () => {
  const resolve = (flags: Record<string, string>, env: Record<string, string> = {}) =>
    controlPlaneOptionsOf(resolveOptions(RUN_OPTIONS, flags, env), pino({ level: 'silent' }));

  it('chooses sessions by node id, comma-separated, with * matching any characters', () => {
    const options = resolve({ inspect: 'ws://localhost:8080', 'inspect-nodes': 'default.web-*, payments.ledger-1' });
    expect(options.inspect?.url).toBe('ws://localhost:8080');
    const chosen = ['default.web-1', 'default.web-22', 'payments.ledger-1', 'default.backend-1', 'payments.ledger-10', 'xdefault.web-1'].filter(
      (node) => options.inspect?.nodes(node),
    );
    expect(chosen).toEqual(['default.web-1', 'default.web-22', 'payments.ledger-1']);
  });

  it('takes both from the environment', () => {
    const options = resolve({}, { CHANCERY_INSPECT: 'wss://inspector.example:443', CHANCERY_INSPECT_NODES: 'default.client' });
    expect(options.inspect?.url).toBe('wss://inspector.example:443');
    expect(options.inspect?.nodes('default.client')).toBe(true);
    expect(options.inspect?.nodes('default.client-2')).toBe(false);
  });

  it('inspects nothing unless asked', () => {
    expect('inspect' in resolve({})).toBe(false);
  });

  it.each([
    [{ inspect: 'ws://localhost:8080' }, /^--inspect needs --inspect-nodes PATTERN/],
    [{ 'inspect-nodes': 'default.web-1' }, /^--inspect-nodes needs --inspect WS-URL/],
    [{ inspect: 'http://localhost:8080', 'inspect-nodes': '*' }, /^--inspect: expected a ws:\/\/ or wss:\/\/ URL; got "http:\/\/localhost:8080"/],
    [{ inspect: 'localhost', 'inspect-nodes': '*' }, /^--inspect: expected a WebSocket URL/],
    [{ inspect: 'ws://localhost:8080', 'inspect-nodes': 'default.web 1' }, /^--inspect-nodes: expected node ids or patterns/],
    [{ inspect: 'ws://localhost:8080', 'inspect-nodes': 'default.web-1,' }, /^--inspect-nodes: expected node ids or patterns/],
  ])('refuses %o with a usage error naming the flag', (flags, message) => {
    expect(() => resolve(flags)).toThrow(UsageError);
    expect(() => resolve(flags)).toThrow(message);
  });

  it('exits 2 with the reason when --inspect comes without --inspect-nodes', async () => {
    const { code, stderr } = await runCli(['run', '--inspect', 'ws://localhost:8080', '--xds-address', '127.0.0.1:0', '--api-address', '127.0.0.1:0']);
    expect(code).toBe(2);
    expect(stderr).toContain('--inspect needs --inspect-nodes PATTERN');
  });
});
