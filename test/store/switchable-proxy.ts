import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP proxy to one database server that a test can switch off and on while keeping its port,
 * so a store connected through it sees the database vanish and come back at the same address.
 * (test/support/tcp-proxy.ts can cut connections but not refuse new ones.)
 */
export interface SwitchableProxy {
  readonly port: number;
  /** Cuts every connection, and cuts each new one as soon as it is accepted. */
  switchOff(): void;
  switchOn(): void;
  close(): Promise<void>;
}

export async function startSwitchableProxy(target: string): Promise<SwitchableProxy> {
  const colon = target.lastIndexOf(':');
  const host = target.slice(0, colon);
  const targetPort = Number(target.slice(colon + 1));
  const sockets = new Set<Socket>();
  let on = true;

  const server = createServer((client) => {
    if (!on) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
  const cutAll = () => {
    for (const socket of [...sockets]) socket.destroy();
  };

  return {
    port,
    switchOff() {
      on = false;
      cutAll();
    },
    switchOn() {
      on = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        cutAll();
      }),
  };
}
