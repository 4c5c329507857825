import { createServer, request, type Server } from 'node:http';
import type { EchoReply } from './echo-backend.js';
import { listenOnLoopback } from './ports.js';

/** A real HTTP server on 127.0.0.1 answering every request with its own name: the app behind an Envoy inbound. */
export interface HttpBackend {
  readonly name: string;
  readonly port: number;
  /** Requests it has answered. */
  readonly served: number;
  stop(): Promise<void>;
}

/** Starts an HTTP backend on a port the OS chooses. */
export async function startHttpBackend(name: string): Promise<HttpBackend> {
  let served = 0;
  const server: Server = createServer((_request, response) => {
    served += 1;
    response.writeHead(200, { 'content-type': 'text/plain', connection: 'close' }).end(name);
  });
  const port = await listenOnLoopback(server);
  return {
    name,
    port,
    get served() {
      return served;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Sends HTTP requests to `127.0.0.1:<port>` (an Envoy's outbound listener), each on a new
 * connection, as `Traffic` sends RPCs: a request's backend is whoever answered it.
 */
export class HttpClient {
  constructor(readonly port: number) {}

  echo(deadlineMs: number): Promise<EchoReply> {
    return new Promise((resolve, reject) => {
      const outgoing = request({ host: '127.0.0.1', port: this.port, path: '/', agent: false, timeout: deadlineMs }, (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        response.on('end', () => (response.statusCode === 200 ? resolve({ servedBy: body }) : reject(new Error(`HTTP ${response.statusCode}: ${body}`))));
        response.on('error', reject);
      });
      outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${deadlineMs} ms`)));
      outgoing.on('error', reject);
      outgoing.end();
    });
  }
}
