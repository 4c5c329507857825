import { Client, credentials } from '@grpc/grpc-js';
import { connect, type Socket } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/defaults.js';
import { CLUSTER, ConnectWindow, XdsServer, type SessionGateway, type StreamSink } from '../../src/xds/index.js';
import { AdsStream } from '../support/ads-client.js';
import { OpenStreams } from '../support/open-streams.js';
import { eventually } from '../support/traffic.js';

/** A gateway that records what the server told it, and answers a node's stream only when the test says so. */
class HeldGateway implements SessionGateway {
  readonly events: string[] = [];
  readonly #sinks = new Map<string, StreamSink>();

  open(_stream: unknown, sink: StreamSink, node: string): void {
    this.#sinks.set(node, sink);
    this.events.push(`open ${node}`);
  }

  request(node: string): void {
    this.events.push(`request ${node}`);
  }

  close(): void {}

  answer(node: string): void {
    this.events.push(`answer ${node}`);
    this.#sinks.get(node)!.send({ protocol: 'sotw', typeUrl: CLUSTER, version: '1', nonce: '1', resources: [] });
  }

  opened(node: string): Promise<void> {
    return eventually(`stream of ${node} opened`, () => this.events.includes(`open ${node}`));
  }
}

const streams = new OpenStreams();

/** A stream on a connection of its own: grpc-js would otherwise share one between clients of the same address. */
function ownConnection(address: string): AdsStream {
  return streams.track(new AdsStream(new Client(address, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 })));
}
const servers: XdsServer[] = [];
afterEach(async () => {
  streams.closeAll();
  await Promise.all(servers.splice(0).map((server) => server.close(1_000)));
});

async function serverWith(window: ConnectWindow) {
  const gateway = new HeldGateway();
  const server = new XdsServer({
    gateway,
    instanceId: 'connect-storm',
    logger: pino({ level: 'silent' }),
    now: () => Date.now(),
    limits: DEFAULTS.xdsLimits,
    clientStatus: { clients: () => [] },
    connectWindow: window,
  });
  servers.push(server);
  return { gateway, server, address: await server.listen('127.0.0.1:0') };
}

describe('a connect storm is taken on a window at a time', () => {
  it('holds a connection, accepted, until one taken on before it is answered', async () => {
    const { gateway, server, address } = await serverWith(new ConnectWindow({ max: 1, patienceMs: 60_000 }));
    const first = ownConnection(address);
    first.send({ typeUrl: CLUSTER, nodeId: 'default.first' });
    await gateway.opened('default.first');

    const second = ownConnection(address);
    second.send({ typeUrl: CLUSTER, nodeId: 'default.second' });
    // Accepted (the kernel drops nothing) and heard from, but not handed to grpc-js: its stream never reaches the server.
    await eventually('the second connection accepted and waiting', () => server.connects().waiting === 1);
    expect(server.connects()).toEqual({ waiting: 1, connecting: 1 });
    expect(gateway.events).toEqual(['open default.first']);

    gateway.answer('default.first');
    expect((await first.nextResponse(1)).typeUrl).toBe(CLUSTER);
    await gateway.opened('default.second');
    expect(gateway.events).toEqual(['open default.first', 'answer default.first', 'open default.second']);
    gateway.answer('default.second');
    expect((await second.nextResponse(1)).typeUrl).toBe(CLUSTER);
    expect(server.connects()).toEqual({ waiting: 0, connecting: 0 });
  });

  it('takes the next connection on once an unanswered one has waited its patience', async () => {
    const patienceMs = 300;
    const { gateway, address } = await serverWith(new ConnectWindow({ max: 1, patienceMs }));
    const silent = ownConnection(address);
    silent.send({ typeUrl: CLUSTER, nodeId: 'default.never-answered' });
    await gateway.opened('default.never-answered');
    const openedAt = performance.now();

    const next = ownConnection(address);
    next.send({ typeUrl: CLUSTER, nodeId: 'default.next' });
    await gateway.opened('default.next');
    // Its place was held from before the first stream opened; it is let go no sooner than its patience.
    expect(performance.now() - openedAt).toBeGreaterThanOrEqual(patienceMs - 50);
  });

  it('takes a connection on only once its client has sent something: a silent one holds no place', async () => {
    const { gateway, server, address } = await serverWith(new ConnectWindow({ max: 1, patienceMs: 60_000 }));
    const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
    const silent: Socket = await new Promise((resolve) => {
      const socket = connect({ host, port }, () => resolve(socket));
    });
    try {
      await eventually('the silent connection accepted', () => server.connects().waiting === 1);
      const next = ownConnection(address);
      next.send({ typeUrl: CLUSTER, nodeId: 'default.next' });
      await gateway.opened('default.next');
      expect(server.connects()).toEqual({ waiting: 1, connecting: 1 });
    } finally {
      silent.destroy();
    }
    await eventually('the silent connection gone', () => server.connects().waiting === 0);
  });

  it('makes room when a stream is ended with a status rather than answered', async () => {
    const { gateway, server, address } = await serverWith(new ConnectWindow({ max: 1, patienceMs: 60_000 }));
    // A type Chancery does not serve: the server ends the stream with INVALID_ARGUMENT, its answer.
    const refused = ownConnection(address);
    refused.send({ typeUrl: 'type.googleapis.com/not.a.Type', nodeId: 'default.refused' });
    expect((await refused.ending()).code).toBe(3);

    const next = ownConnection(address);
    next.send({ typeUrl: CLUSTER, nodeId: 'default.next' });
    await gateway.opened('default.next');
    expect(server.connects().waiting).toBe(0);
  });
});
