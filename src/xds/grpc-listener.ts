import type { Server, ServerCredentials } from '@grpc/grpc-js';
import { createServer, type Server as NetServer } from 'node:net';

/**
 * The accept queue a listener asks the kernel for. grpc-js's own `bindAsync` listens with Node's
 * default of 511, so when a fleet of thousands reconnects at once (a restart, a failover) the
 * queue overflows and the kernel drops the handshakes it cannot queue: each dropped client waits
 * out TCP's SYN back-off (1 s, 3 s, 7 s, 15 s, 31 s …) before it is even accepted. Go's
 * listeners ask for the system's maximum (`net.core.somaxconn`), and so does this one; Linux
 * caps the request at that maximum.
 */
export const ACCEPT_BACKLOG = 65_535;

/** A bound listener feeding a grpc-js server; `close` stops accepting (open connections stay). */
export interface GrpcListener {
  /** `host:port` as bound (the port the OS chose for port 0). */
  readonly address: string;
  close(): void;
}

/** `host:port` or `[v6]:port` split; the host as `net` wants it (no brackets). */
function hostAndPort(address: string): { host: string; port: number; shown: string } {
  const colon = address.lastIndexOf(':');
  const port = Number(address.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`"${address}" is not a host:port address`);
  const shown = address.slice(0, colon);
  return { host: shown.replace(/^\[(.*)\]$/, '$1'), port, shown };
}

/**
 * Listens on `address` with an accept queue of ACCEPT_BACKLOG and hands each accepted
 * connection to `server` (grpc-js's connection injector, which serves it exactly as a bound
 * port would, TLS included).
 */
export function listenForGrpc(server: Server, address: string, credentials: ServerCredentials): Promise<GrpcListener> {
  const { host, port, shown } = hostAndPort(address);
  const injector = server.createConnectionInjector(credentials);
  const listener: NetServer = createServer({ noDelay: true }, (socket) => injector.injectConnection(socket));
  return new Promise((resolve, reject) => {
    listener.once('error', reject);
    listener.listen({ host, port, backlog: ACCEPT_BACKLOG }, () => {
      listener.off('error', reject);
      const bound = listener.address();
      const boundPort = typeof bound === 'object' && bound !== null ? bound.port : port;
      resolve({ address: `${shown}:${boundPort}`, close: () => listener.close() });
    });
  });
}
