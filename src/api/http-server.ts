import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import fastify, { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { TlsFiles } from '../identity/index.js';
import { registerAccess, type ApiAccess } from './access.js';
import { registerApplyRoutes } from './apply-routes.js';
import type { ApiBackend } from './api-backend.js';
import { registerBodyParsers } from './body-parsers.js';
import { registerBootstrapRoutes } from './bootstrap-routes.js';
import { registerCaRoutes } from './ca-routes.js';
import { registerCertificateRoutes } from './certificate-routes.js';
import { registerRevisionRoutes } from './revision-routes.js';
import { answerClientError } from './client-errors.js';
import { errorResponse, type ServerLimits } from './error-response.js';
import { MalformedRequestError, MethodNotAllowedError, RouteNotFoundError } from './errors.js';
import { registerFleetRoutes } from './fleet-routes.js';
import { registerHistoryRoutes } from './history-routes.js';
import { registerIdentityRoutes } from './identity-routes.js';
import { registerMetricsRoutes } from './metrics-routes.js';
import { registerPathCheck } from './path-params.js';
import { registerPolicyExplanationRoutes } from './policy-explanation-routes.js';
import { registerPolicyRoutes } from './policy-routes.js';
import { registerQueryCheck } from './query-params.js';
import { registerResourceRoutes } from './resource-routes.js';
import { RouteMethods } from './route-methods.js';
import { registerSessionHistoryRoutes } from './session-history-routes.js';
import { registerSessionRoutes } from './session-routes.js';
import { registerUiRoutes } from './ui-routes.js';
import { registerStatechartRoutes } from './statechart-routes.js';

/** The largest request body accepted unless `bodyLimit` says otherwise: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * The longest path segment the router matches; a longer one is 414. The longest name in a
 * URL is a node id, two DNS labels and a dot (127 characters); fastify's default of 100 would
 * refuse some valid ones.
 */
export const MAX_PATH_SEGMENT = 256;

/** How long `close` waits for requests in flight before closing their connections. */
const CLOSE_TIMEOUT_MS = 5_000;

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
  /**
   * Stops accepting requests and resolves once those in flight are answered and their
   * connections closed, closing the connections still open after `timeoutMs` (default 5 s).
   */
  close(timeoutMs?: number): Promise<void>;
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
  const limits: ServerLimits = { bodyLimit, maxPathSegment: MAX_PATH_SEGMENT };
  const logger: FastifyBaseLogger = options.logger;
  const { tls } = options;
  const answer = (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // A route may take a larger body than the server's default (POST /apply).
    const { status, body, headers, unexpected } = errorResponse(error, { ...limits, bodyLimit: request.routeOptions?.bodyLimit ?? bodyLimit });
    if (unexpected) request.log.error({ err: error, method: request.method, url: request.url }, 'request failed');
    else if (status >= 500) request.log.warn({ code: body.code, reason: body.reason }, 'request failed');
    else if (status === 401 || status === 403) request.log.warn({ code: body.code, reason: body.reason, method: request.method, url: request.url, ip: request.ip }, 'request refused');
    return reply.code(status).headers(headers).send(body);
  };
  const app = fastify({
    loggerInstance: logger,
    bodyLimit,
    // Node answers a missing Host itself, with an empty body; the hook below answers it in ours.
    ...(tls ? { https: { ...secureContextOf(tls), requireHostHeader: false } } : { http: { requireHostHeader: false } }),
    routerOptions: { maxParamLength: MAX_PATH_SEGMENT },
    // A line per request is noise at `info`; writes and failures are logged by the handlers.
    logController: new LogController({ disableRequestLogging: !options.logger.isLevelEnabled('debug') }),
    // The router's own refusals (an undecodable URL, an over-long segment) and requests Node
    // cannot parse are answered in the same shape as every other error (issue 11).
    frameworkErrors: answer,
    clientErrorHandler: (error, socket) => answerClientError(error, socket, limits),
  });

  app.setErrorHandler(answer);
  app.addHook('onRequest', async (request) => {
    // RFC 9112 §3.2: a server must answer 400 to an HTTP/1.1 request without a Host header.
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      throw new MalformedRequestError('an HTTP/1.1 request needs a Host header', { field: 'Host' });
    }
  });
  const routes = new RouteMethods();
  app.addHook('onRoute', (route) => routes.add(route.method, route.url));
  app.setNotFoundHandler(async (request) => {
    const allowed = routes.allowed(request.url.split('?', 1)[0] ?? '');
    throw allowed.length > 0 ? new MethodNotAllowedError(request.method, allowed) : new RouteNotFoundError(request.method, request.url);
  });
  registerBodyParsers(app, bodyLimit);
  registerAccess(app, options.access ?? { mode: 'none' });
  registerPathCheck(app);
  registerQueryCheck(app);
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
  registerResourceRoutes(app, backend);
  registerApplyRoutes(app, backend);
  registerPolicyRoutes(app, backend);
  registerPolicyExplanationRoutes(app, backend.store);
  registerRevisionRoutes(app, backend);
  registerHistoryRoutes(app, backend.store);
  registerIdentityRoutes(app, backend);
  registerCaRoutes(app, backend);
  if (backend.dataplanes) registerCertificateRoutes(app, { ...backend, dataplanes: backend.dataplanes });
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
    async close(timeoutMs = CLOSE_TIMEOUT_MS) {
      // A client that neither ends its request nor hangs up (a live feed's reader, a stalled
      // upload) must not hold the control plane's stop: as the xDS server forces its own close.
      const force = setTimeout(() => app.server.closeAllConnections(), timeoutMs);
      try {
        await app.close();
      } finally {
        clearTimeout(force);
      }
    },
  };
}

/** The HTTPS server's certificate, key and (for mutual TLS) the CA client certificates must chain to. */
function secureContextOf(tls: TlsFiles) {
  const { cert, key, clientCa } = tls.material;
  return { cert, key, ...(clientCa && { ca: clientCa, requestCert: true, rejectUnauthorized: true }) };
}
