import { createServer, request, type Server } from 'node:http';
import { listenOnLoopback } from './ports.js';

/**
 * How a scripted backend answers: `ok` at once; `slow` after `delayMs`; `flaky` with 503 on
 * every other request (half of them); `broken` with 500 on every request.
 */
export type Behaviour = { readonly kind: 'ok' } | { readonly kind: 'slow'; readonly delayMs: number } | { readonly kind: 'flaky' } | { readonly kind: 'broken' };

/**
 * A real HTTP server on 127.0.0.1 answering with its own name, as a test scripts it: the app
 * behind an Envoy inbound whose failures and slowness policies are measured against.
 */
export interface ScriptedBackend {
  readonly name: string;
  readonly port: number;
  /** Requests it has received. */
  readonly received: number;
  behave(behaviour: Behaviour): void;
  stop(): Promise<void>;
}

export async function startScriptedBackend(name: string): Promise<ScriptedBackend> {
  let behaviour: Behaviour = { kind: 'ok' };
  let received = 0;
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((_request, response) => {
    received += 1;
    const answer = (status: number) => response.writeHead(status, { 'content-type': 'text/plain', connection: 'close' }).end(name);
    switch (behaviour.kind) {
      case 'ok':
        return answer(200);
      case 'broken':
        return answer(500);
      case 'flaky':
        return answer(received % 2 === 0 ? 503 : 200);
      case 'slow': {
        const timer = setTimeout(() => {
          timers.delete(timer);
          answer(200);
        }, behaviour.delayMs);
        timers.add(timer);
        return undefined;
      }
    }
  });
  const port = await listenOnLoopback(server);
  return {
    name,
    port,
    get received() {
      return received;
    },
    behave(next) {
      behaviour = next;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One HTTP answer as a client saw it: the status, the body (a backend's name, or Envoy's reason), and how long it took. */
export interface Answer {
  readonly status: number;
  readonly body: string;
  readonly ms: number;
}

/**
 * A GET of `path` on `127.0.0.1:<port>` (an Envoy outbound listener), on a new connection;
 * rejects only when no HTTP answer came (connection refused or reset, or `deadlineMs` passed).
 */
export function get(port: number, path = '/', deadlineMs = 10_000): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: '127.0.0.1', port, path, agent: false, timeout: deadlineMs }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body, ms: performance.now() - started }));
      response.on('error', reject);
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${deadlineMs} ms`)));
    outgoing.on('error', reject);
    outgoing.end();
  });
}
