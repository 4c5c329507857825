import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import fastify, { type FastifyBaseLogger, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { TlsFiles } from '../identity/index.js';
import { registerAccess, type ApiAccess } from './access.js';
import type { ApiBackend } from './api-backend.js';
import { registerBodyParsers } from './body-parsers.js';
import { registerBootstrapRoutes } from './bootstrap-routes.js';
import { errorResponse } from './error-response.js';
import { RouteNotFoundError } from './errors.js';
import { registerFleetRoutes } from './fleet-routes.js';
import { registerHistoryRoutes } from './history-routes.js';
import { registerIdentityRoutes } from './identity-routes.js';
import { registerMetricsRoutes } from './metrics-routes.js';
import { registerResourceRoutes } from './resource-routes.js';
import { registerSessionHistoryRoutes } from './session-history-routes.js';
import { registerSessionRoutes } from './session-routes.js';
import { registerUiRoutes } from './ui-routes.js';
import { registerStatechartRoutes } from './statechart-routes.js';

/** The largest request body accepted unless `bodyLimit` says otherwise: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export interface ApiServerOptions {
  readonly logger: Logger;
  /** Bytes; larger bodies are refused with 413 `CHANCERY_API_BODY_TOO_LARGE`. */
  readonly bodyLimit?: number;
  /** Whether callers must present an API token; default: not. */
  readonly access?: ApiAccess;
  /** HTTPS with these files, followed as they change; default plain HTTP. */
  readonly tls?: TlsFiles;
}

export interface ApiServer {
  /** Starts listening; resolves with the `host:port` actually bound (port 0 picks one). */
  listen(host: string, port: number): Promise<string>;
  /** Stops accepting requests and resolves once those in flight are answered. */
  close(): Promise<void>;
}

/**
 * The HTTP API (DESIGN §7) over a running control plane. Handlers parse, call the store or
 * the session registry, and serialize; every error, fastify's own included, is answered by
 * `errorResponse`.
 *
 * @example
 * const server = createApiServer(backend, { logger });
 * const address = await server.listen('127.0.0.1', 5681);
 */
export function createApiServer(backend: ApiBackend, options: ApiServerOptions): ApiServer {
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const logger: FastifyBaseLogger = options.logger;
  const { tls } = options;
  const app = fastify({
    loggerInstance: logger,
    bodyLimit,
    ...(tls && { https: secureContextOf(tls) }),
    // A line per request is noise at `info`; writes and failures are logged by the handlers.
    logController: new LogController({ disableRequestLogging: !options.logger.isLevelEnabled('debug') }),
  });

  app.setErrorHandler((error, request, reply) => {
    const { status, body, unexpected } = errorResponse(error, { bodyLimit });
    if (unexpected) request.log.error({ err: error, method: request.method, url: request.url }, 'request failed');
    else if (status >= 500) request.log.warn({ code: body.code, reason: body.reason }, 'request failed');
    else if (status === 401 || status === 403) request.log.warn({ code: body.code, reason: body.reason, method: request.method, url: request.url, ip: request.ip }, 'request refused');
    if (status === 401) reply.header('www-authenticate', 'Bearer realm="chancery"');
    return reply.code(status).send(body);
  });
  app.setNotFoundHandler(async (request) => {
    throw new RouteNotFoundError(request.method, request.url);
  });
  registerBodyParsers(app);
  registerAccess(app, options.access ?? { mode: 'none' });
  if (tls) {
    const unsubscribe = tls.onChange(() => (app.server as HttpsServer).setSecureContext(secureContextOf(tls)));
    app.addHook('onClose', async () => unsubscribe());
  }

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) =>
    backend.ready()
      ? { status: 'ok' }
      : reply.code(503).send({ status: 'not-ready', reason: 'the store has not caught up with the event log yet' }),
  );
  registerResourceRoutes(app, backend.store);
  registerHistoryRoutes(app, backend.store);
  registerIdentityRoutes(app, backend);
  registerBootstrapRoutes(app, backend);
  registerSessionRoutes(app, backend);
  registerFleetRoutes(app, backend);
  if (backend.metrics) registerMetricsRoutes(app, backend.metrics);
  registerUiRoutes(app);
  registerSessionHistoryRoutes(app, backend);
  registerStatechartRoutes(app, backend);

  return {
    async listen(host, port) {
      // `[::1]` as in `[::1]:5681`; Node's listen wants the bare address.
      await app.listen({ host: host.replace(/^\[(.*)\]$/, '$1'), port });
      const { address, family, port: bound } = app.server.address() as AddressInfo;
      return family === 'IPv6' ? `[${address}]:${bound}` : `${address}:${bound}`;
    },
    close: () => app.close(),
  };
}

/** The HTTPS server's certificate, key and (for mutual TLS) the CA client certificates must chain to. */
function secureContextOf(tls: TlsFiles) {
  const { cert, key, clientCa } = tls.material;
  return { cert, key, ...(clientCa && { ca: clientCa, requestCert: true, rejectUnauthorized: true }) };
}
