import { createServer, type AddressInfo, type Server } from 'node:net';

/**
 * A port on 127.0.0.1 that nothing listens on now: bound by the OS, then released. For what
 * must be told a port before it binds one (a Dataplane's listener before its Envoy starts, a
 * server that cannot report the port the OS chose), and for a port to find closed.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Binds `server` (a net, HTTP or TCP server) to a port of the OS's choosing on 127.0.0.1, and resolves with it. */
export function listenOnLoopback(server: Pick<Server, 'once' | 'listen' | 'address'>): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}
