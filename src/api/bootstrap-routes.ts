import type { FastifyInstance } from 'fastify';
import { Document } from 'yaml';
import { dialable, excerpt, formatHostPort, HOST_PORT_RULE, type HostPort, parseHostPort } from '../common/index.js';
import { envoyBootstrap, grpcBootstrap, nodeIdOf, type Dataplane, type ResourceKey } from '../mesh/index.js';
import { NotFoundError, type ResourceStore, type Stored } from '../store/index.js';
import type { ApiBackend } from './api-backend.js';
import { InvalidQueryError } from './errors.js';
import { integer, type Query, single, takes } from './query-params.js';

const FORMATS = ['envoy', 'grpc'] as const;
type BootstrapFormat = (typeof FORMATS)[number];

/** Envoy's own default admin port. */
const DEFAULT_ADMIN_PORT = 9901;

/** The request header a dataplane token for an Envoy bootstrap comes in: a secret stays out of URLs and logs. */
export const DATAPLANE_TOKEN_HEADER = 'x-chancery-dataplane-token';

const GRPC_CREDENTIALS = ['insecure', 'google_default'] as const;

/**
 * `GET /meshes/{mesh}/dataplanes/{name}/bootstrap?format=envoy|grpc` (DESIGN §7): what the
 * dataplane starts from, as `chancery bootstrap` prints it. `xds=HOST:PORT` is where it dials
 * (default: this instance's own xDS address). Envoy also takes `adminPort=N`, `delta=true`,
 * `caFile=PATH` (TLS to Chancery, trusting that CA file on the Envoy's host) and a dataplane
 * token in the `X-Chancery-Dataplane-Token` header; gRPC takes `credentials=insecure|google_default`.
 */
export function registerBootstrapRoutes(app: FastifyInstance, { store, xdsAddress }: Pick<ApiBackend, 'store' | 'xdsAddress'>): void {
  app.get<{ Params: { mesh: string; name: string }; Querystring: Query }>('/meshes/:mesh/dataplanes/:name/bootstrap', takes('format', 'xds', 'adminPort', 'delta', 'caFile', 'credentials', 'certificates'), async (request, reply) => {
    const { query } = request;
    const format = formatOf(query);
    const xds = xdsOf(query, xdsAddress());
    const dataplane = dataplaneOf(store, { type: 'Dataplane', ...request.params });
    const token = request.headers[DATAPLANE_TOKEN_HEADER];
    if (format === 'grpc') {
      for (const field of ['adminPort', 'delta', 'caFile']) {
        if (query[field] !== undefined) throw new InvalidQueryError(field, `${field} applies to format=envoy: a proxyless gRPC client has no admin listener, speaks SotW only, and reads its CA from GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`);
      }
      if (token !== undefined) throw new InvalidQueryError(DATAPLANE_TOKEN_HEADER, 'a proxyless gRPC client cannot send a token from its bootstrap: give it a service account (credentials=google_default)');
      const credentials = credentialsOf(query);
      // The directory of the node's mTLS files (`chancery agent --dir`), on the client's host.
      const certificates = single(query, 'certificates');
      if (certificates === '') throw new InvalidQueryError('certificates', 'certificates must name the directory chancery agent writes');
      const bootstrap = grpcBootstrap(dataplane.resource, { xds, credentials, ...(certificates !== undefined && { certificates }) });
      return reply.type('application/json; charset=utf-8').send(`${JSON.stringify(bootstrap, null, 2)}\n`);
    }
    if (query['credentials'] !== undefined) throw new InvalidQueryError('credentials', 'credentials applies to format=grpc; an Envoy takes caFile and a token');
    if (query['certificates'] !== undefined) throw new InvalidQueryError('certificates', 'certificates applies to format=grpc; an Envoy gets its certificates by SDS');
    if (Array.isArray(token) || (token !== undefined && !/^[\x21-\x7e]+$/.test(token))) {
      throw new InvalidQueryError(DATAPLANE_TOKEN_HEADER, `${DATAPLANE_TOKEN_HEADER} must be one token, without spaces`);
    }
    const caFile = single(query, 'caFile');
    if (caFile === '') throw new InvalidQueryError('caFile', 'caFile must be a path');
    const adminPort = integer(query, 'adminPort', { min: 0, max: 65_535 }) ?? DEFAULT_ADMIN_PORT;
    const bootstrap = envoyBootstrap(dataplane.resource, {
      xds,
      adminPort,
      mode: deltaOf(query) ? 'delta' : 'sotw',
      ...(token !== undefined && { token }),
      ...(caFile !== undefined && { caFile }),
    });
    const document = new Document(bootstrap);
    const { mesh, name } = dataplane.resource;
    document.commentBefore = ` Envoy bootstrap for Dataplane ${mesh}/${name} (node ${nodeIdOf(mesh, name)}), from Chancery at ${formatHostPort(xds)}.\n envoy -c <this file>`;
    return reply.type('application/yaml; charset=utf-8').send(document.toString());
  });
}

function formatOf(query: Query): BootstrapFormat {
  const format = single(query, 'format') ?? 'envoy';
  const known = FORMATS.find((candidate) => candidate === format);
  if (known === undefined) throw new InvalidQueryError('format', `format must be one of ${FORMATS.join(', ')}; got ${excerpt(format)}`);
  return known;
}

function xdsOf(query: Query, own: string): HostPort {
  const given = single(query, 'xds');
  const parsed = parseHostPort(given ?? own);
  if (parsed === undefined || parsed.port === 0) throw new InvalidQueryError('xds', `xds must be ${HOST_PORT_RULE}; got ${excerpt(given)}`);
  return dialable(parsed);
}

function credentialsOf(query: Query): (typeof GRPC_CREDENTIALS)[number] {
  const given = single(query, 'credentials') ?? 'insecure';
  const known = GRPC_CREDENTIALS.find((candidate) => candidate === given);
  if (known === undefined) throw new InvalidQueryError('credentials', `credentials must be one of ${GRPC_CREDENTIALS.join(', ')}; got ${excerpt(given)}`);
  return known;
}

function deltaOf(query: Query): boolean {
  const delta = single(query, 'delta');
  if (delta === undefined || delta === 'false') return false;
  if (delta === 'true') return true;
  throw new InvalidQueryError('delta', `delta must be true or false; got ${excerpt(delta)}`);
}

function dataplaneOf(store: ResourceStore, key: ResourceKey): Stored<Dataplane> {
  const stored = store.get(key);
  if (stored === undefined) throw new NotFoundError(key);
  return stored as Stored<Dataplane>;
}
