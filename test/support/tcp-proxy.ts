import { createServer, connect, type Socket } from 'node:net';
import { listenOnLoopback } from './ports.js';

/**
 * A real TCP proxy on 127.0.0.1 in front of one or more targets, chosen round robin per
 * accepted connection: what an ordinary TCP load balancer in front of Chancery does. Tests
 * use it to break connections on demand (`cutAll`), to make a target vanish and come back at
 * the same address (`switchOff`, `switchOn`), and to count how often clients came back.
 */
export interface TcpProxy {
  /** `127.0.0.1:<port>`: point clients here. */
  readonly address: string;
  readonly port: number;
  /** Client connections accepted since start. */
  readonly connections: number;
  /** Client connections open now. */
  readonly open: number;
  /** Times `cutAll` was called. */
  readonly cuts: number;
  /** Client connections accepted per target, in target order. */
  readonly perTarget: readonly number[];
  /** Destroys every open client and upstream socket at once; the listener keeps accepting. */
  cutAll(): void;
  /** Cuts every connection, and each new one as soon as it is accepted (not counted), until `switchOn`. */
  switchOff(): void;
  switchOn(): void;
  /** New connections go to these targets from now on (a scale-out or a removal); open ones stay. */
  setTargets(targets: readonly string[]): void;
  /** Stops accepting, cuts everything, and resolves once the listener is closed. */
  close(): Promise<void>;
}

/** Starts a proxy on a port the OS chooses; `targets` are `host:port`, used round robin. */
export async function startTcpProxy(targets: readonly string[]): Promise<TcpProxy> {
  if (targets.length === 0) throw new Error('a TCP proxy needs at least one target');
  let upstreams = targets.map(parseTarget);
  const sockets = new Set<Socket>();
  const perTarget = upstreams.map(() => 0);
  let connections = 0;
  let open = 0;
  let cuts = 0;
  let next = 0;
  let on = true;

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };

  const server = createServer((client) => {
    if (!on) {
      client.destroy();
      return;
    }
    const index = next % upstreams.length;
    next = (index + 1) % upstreams.length;
    const target = upstreams[index]!;
    connections += 1;
    perTarget[index] = (perTarget[index] ?? 0) + 1;
    open += 1;
    const upstream = connect(target.port, target.host);
    track(client);
    track(upstream);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    // Either side failing or closing takes the other down with it, as a load balancer would.
    const teardown = () => {
      client.destroy();
      upstream.destroy();
    };
    client.once('close', () => {
      open -= 1;
      teardown();
    });
    upstream.once('close', teardown);
    client.on('error', teardown);
    upstream.on('error', teardown);
    client.pipe(upstream);
    upstream.pipe(client);
  });

  const port = await listenOnLoopback(server);

  const destroyAll = () => {
    for (const socket of [...sockets]) socket.destroy();
  };

  return {
    address: `127.0.0.1:${port}`,
    port,
    get connections() {
      return connections;
    },
    get open() {
      return open;
    },
    get cuts() {
      return cuts;
    },
    get perTarget() {
      return [...perTarget];
    },
    cutAll() {
      cuts += 1;
      destroyAll();
    },
    switchOff() {
      on = false;
      destroyAll();
    },
    switchOn() {
      on = true;
    },
    setTargets(replacement) {
      if (replacement.length === 0) throw new Error('a TCP proxy needs at least one target');
      upstreams = replacement.map(parseTarget);
      while (perTarget.length < upstreams.length) perTarget.push(0);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        destroyAll();
      }),
  };
}

function parseTarget(target: string): { host: string; port: number } {
  const colon = target.lastIndexOf(':');
  const port = Number(target.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port <= 0 || port > 65_535) {
    throw new Error(`TCP proxy target "${target}" is not host:port`);
  }
  return { host: target.slice(0, colon), port };
}
