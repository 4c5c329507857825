import { ChanceryError, clip } from '../common/index.js';
import type { ValidationIssue } from '../mesh/index.js';
import type { ChangeWarning, InvalidSinceError, WarningsRefusedError } from '../changes/index.js';
import type {
  AuthorityInUseError,
  DataplaneUnauthenticatedError,
  InvalidCertificateRequestError,
  InvalidIdentityRequestError,
  InvalidTokenLifetimeError,
  MtlsUnavailableError,
} from '../identity/index.js';
import type { ResourceKey } from '../mesh/index.js';
import {
  type FutureRevisionError,
  type MeshNotFoundError,
  NotFoundError,
  type RevisionCompactedError,
  type RevisionMovedError,
  type StoreRejectedWriteError,
  type StoreUnavailableError,
  type VersionConflictError,
} from '../store/index.js';
import { ACCEPTED_MEDIA_TYPES } from './body-parsers.js';
import {
  type ApiError,
  BodyTooLargeError,
  type RefusedDocument,
  InternalError,
  MalformedRequestError,
  MethodNotAllowedError,
  UnsupportedMediaTypeError,
  UrlTooLongError,
} from './errors.js';

type HandledError =
  | ApiError
  | VersionConflictError
  | NotFoundError
  | MeshNotFoundError
  | RevisionCompactedError
  | RevisionMovedError
  | FutureRevisionError
  | StoreRejectedWriteError
  | StoreUnavailableError
  | InvalidTokenLifetimeError
  | InvalidIdentityRequestError
  | AuthorityInUseError
  | InvalidCertificateRequestError
  | MtlsUnavailableError
  | DataplaneUnauthenticatedError
  | WarningsRefusedError
  | InvalidSinceError;
export type ApiErrorCode = HandledError['code'];

/**
 * Every code the API answers with, and its HTTP status. Typed as a full record, so a new
 * error class without a status here does not compile.
 *
 * A missing mesh is 404 wherever it appears (writing, listing or reading a Dataplane of
 * it): the mesh is part of the URL, so the addressed collection does not exist — as a
 * missing namespace is 404 in Kubernetes. A revision older than the retained history is 410
 * Gone: it existed, and retention removed it for good; one not reached yet is a bad request.
 */
export const ERROR_STATUS: Readonly<Record<ApiErrorCode, number>> = {
  CHANCERY_API_INVALID_RESOURCE: 400,
  CHANCERY_API_PATH_MISMATCH: 400,
  CHANCERY_API_MALFORMED_BODY: 400,
  CHANCERY_API_MALFORMED_REQUEST: 400,
  CHANCERY_API_URL_TOO_LONG: 414,
  CHANCERY_API_HEADERS_TOO_LARGE: 431,
  CHANCERY_API_REQUEST_TIMEOUT: 408,
  CHANCERY_API_METHOD_NOT_ALLOWED: 405,
  CHANCERY_API_INVALID_PRECONDITION: 400,
  CHANCERY_API_INVALID_QUERY: 400,
  CHANCERY_API_INVALID_NAME: 400,
  CHANCERY_API_SESSION_NOT_FOUND: 404,
  CHANCERY_API_ROUTE_NOT_FOUND: 404,
  CHANCERY_API_UNAUTHENTICATED: 401,
  CHANCERY_API_FORBIDDEN: 403,
  CHANCERY_API_APPLY_REFUSED: 400,
  CHANCERY_API_BODY_TOO_LARGE: 413,
  CHANCERY_API_UNSUPPORTED_MEDIA_TYPE: 415,
  CHANCERY_API_INTERNAL: 500,
  CHANCERY_STORE_NOT_FOUND: 404,
  CHANCERY_STORE_MESH_NOT_FOUND: 404,
  CHANCERY_STORE_VERSION_CONFLICT: 409,
  CHANCERY_STORE_REVISION_COMPACTED: 410,
  CHANCERY_STORE_REVISION_MOVED: 409,
  CHANCERY_STORE_FUTURE_REVISION: 400,
  CHANCERY_STORE_REJECTED_WRITE: 500,
  CHANCERY_STORE_UNAVAILABLE: 503,
  CHANCERY_CHANGES_WARNINGS: 409,
  CHANCERY_CHANGES_INVALID_SINCE: 400,
  CHANCERY_IDENTITY_INVALID_TTL: 400,
  CHANCERY_IDENTITY_INVALID_REQUEST: 400,
  CHANCERY_IDENTITY_CA_IN_USE: 409,
  CHANCERY_IDENTITY_INVALID_CSR: 400,
  CHANCERY_IDENTITY_MTLS_UNAVAILABLE: 409,
  CHANCERY_IDENTITY_DATAPLANE_UNAUTHENTICATED: 401,
};

/** The field an error names when the error itself carries none. */
const DEFAULT_FIELD: Partial<Record<ApiErrorCode, string>> = {
  CHANCERY_STORE_MESH_NOT_FOUND: 'mesh',
};

/** The JSON body of every error answer. */
export interface ErrorBody {
  readonly code: ApiErrorCode;
  readonly field?: string;
  readonly reason: string;
  readonly issues?: readonly ValidationIssue[];
  /** `POST /apply`: each refused resource. */
  readonly items?: readonly RefusedDocument[];
  /** A write refused for its warnings (`failOnWarnings`): each of them. */
  readonly warnings?: readonly ChangeWarning[];
}

export interface ErrorResponse {
  readonly status: number;
  readonly body: ErrorBody;
  /** Headers the status calls for: `Allow` with a 405, `WWW-Authenticate` with a 401. */
  readonly headers: Readonly<Record<string, string>>;
  /** The error was not one the API expects: log it, with its cause. */
  readonly unexpected: boolean;
}

/** What the mapping of fastify's own errors needs to know of the server. */
export interface ServerLimits {
  readonly bodyLimit: number;
  /** The longest path segment the router matches (fastify's `maxParamLength`). */
  readonly maxPathSegment: number;
}

/**
 * The one place an error becomes an HTTP answer. Chancery errors are mapped by code;
 * fastify's own request errors (body too large, bad Content-Length, undecodable URL, over-long
 * path segment) are first turned into ours, never passing on a message that repeats the
 * request; anything else is a 500 whose details stay in the log.
 */
export function errorResponse(error: unknown, limits: ServerLimits): ErrorResponse {
  const handled = asHandled(error, limits);
  const { code } = handled;
  const field = 'field' in handled && typeof handled.field === 'string' ? handled.field : handled instanceof NotFoundError ? urlFieldOf(handled.key) : DEFAULT_FIELD[code];
  const body: ErrorBody = {
    code,
    ...(field !== undefined && { field }),
    reason: handled.message,
    ...('issues' in handled && { issues: handled.issues }),
    ...('items' in handled && { items: handled.items }),
    ...('warnings' in handled && { warnings: handled.warnings }),
  };
  const headers: Record<string, string> =
    handled instanceof MethodNotAllowedError
      ? { allow: handled.allowed.join(', ') }
      : code === 'CHANCERY_API_UNAUTHENTICATED'
        ? { 'www-authenticate': 'Bearer realm="chancery"' }
        : {};
  // A 500 is a bug, whatever its code: logged with its cause.
  const status = ERROR_STATUS[code];
  return { status, body, headers, unexpected: status === 500 };
}

/** The path parameter naming a resource of the key's type: what a 404 says does not exist (path-params.ts). */
function urlFieldOf(key: ResourceKey): string {
  switch (key.type) {
    case 'Mesh':
      return 'mesh';
    case 'SigningKey':
    case 'ServiceAccountKey':
      return 'kid';
    default:
      return 'name';
  }
}

/** The longest fastify message passed on: some (a bad Content-Length) are short and useful. */
const FASTIFY_MESSAGE_LENGTH = 120;

function asHandled(error: unknown, limits: ServerLimits): HandledError {
  if (error instanceof ChanceryError && Object.hasOwn(ERROR_STATUS, error.code)) return error as HandledError;
  const fastifyCode = error instanceof Error && 'code' in error ? error.code : undefined;
  switch (fastifyCode) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new BodyTooLargeError(limits.bodyLimit);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaTypeError(undefined, ACCEPTED_MEDIA_TYPES);
    // Both quote the whole path: ours say what is wrong without it.
    case 'FST_ERR_BAD_URL':
      return new MalformedRequestError('the URL path is not valid percent-encoded UTF-8', { cause: error, field: 'url' });
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new UrlTooLongError(limits.maxPathSegment);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new MalformedRequestError('the body is not as long as Content-Length says', { cause: error, field: 'Content-Length' });
  }
  if (typeof fastifyCode === 'string' && fastifyCode.startsWith('FST_') && isClientError(error)) {
    return new MalformedRequestError(clip((error as Error).message, FASTIFY_MESSAGE_LENGTH), { cause: error });
  }
  return new InternalError({ cause: error });
}

function isClientError(error: unknown): boolean {
  const status = typeof error === 'object' && error !== null && 'statusCode' in error ? error.statusCode : undefined;
  return typeof status === 'number' && status >= 400 && status < 500;
}
