import { ChanceryError, clip, excerpt } from '../common/index.js';
import type { ValidationIssue } from '../mesh/index.js';

/** The body failed resource validation; nothing was stored. `field` is the first issue's path (`body` for the whole body). */
export class InvalidResourceError extends ChanceryError {
  readonly code = 'CHANCERY_API_INVALID_RESOURCE';
  readonly field: string;
  constructor(readonly issues: readonly ValidationIssue[]) {
    const first = issues[0] ?? { path: '', reason: 'invalid resource' };
    super(first.path === '' ? first.reason : `${first.path}: ${first.reason}`);
    this.field = first.path === '' ? 'body' : first.path;
  }
}

/** The body names a different type, mesh or name than the URL path it was sent to. */
export class PathMismatchError extends ChanceryError {
  readonly code = 'CHANCERY_API_PATH_MISMATCH';
  constructor(
    readonly field: 'type' | 'mesh' | 'name',
    readonly inBody: unknown,
    readonly inPath: string,
  ) {
    super(`${field} is ${excerpt(inBody)} in the body but ${excerpt(inPath)} in the path`);
  }
}

/**
 * The body is not parseable JSON or YAML (or is empty), or gives a key twice in one object.
 * `field` is the key given twice, or `body`.
 */
export class MalformedBodyError extends ChanceryError {
  readonly code = 'CHANCERY_API_MALFORMED_BODY';
  readonly field: string;
  constructor(detail: string, options?: { readonly cause?: unknown; readonly field?: string }) {
    super(detail, options);
    this.field = options?.field ?? 'body';
  }
}

/** The body, as sent or once its YAML aliases are expanded, is larger than the server accepts (`bodyLimit`). */
export class BodyTooLargeError extends ChanceryError {
  readonly code = 'CHANCERY_API_BODY_TOO_LARGE';
  readonly field = 'body';
  constructor(
    readonly limit: number,
    readonly as: 'sent' | 'expanded' = 'sent',
  ) {
    super(
      as === 'sent'
        ? `request body is larger than the limit of ${limit} bytes`
        : `request body expands (YAML aliases) to more than the limit of ${limit} bytes`,
    );
  }
}

/**
 * The request could not be read at all: not HTTP, a bad Content-Length, an undecodable URL.
 * `field` is the part at fault (`url`, `Host`, `Content-Length`), or `request`.
 */
export class MalformedRequestError extends ChanceryError {
  readonly code = 'CHANCERY_API_MALFORMED_REQUEST';
  readonly field: string;
  constructor(detail: string, options?: { readonly cause?: unknown; readonly field?: string }) {
    super(detail, options);
    this.field = options?.field ?? 'request';
  }
}

/** A segment of the URL path is longer than any name the API has (`MAX_PATH_SEGMENT`). */
export class UrlTooLongError extends ChanceryError {
  readonly code = 'CHANCERY_API_URL_TOO_LONG';
  readonly field = 'url';
  constructor(readonly limit: number) {
    super(`a segment of the URL path is longer than ${limit} characters; no name is`);
  }
}

/** The request's headers (with its URL) are larger than Node's HTTP parser accepts. */
export class HeadersTooLargeError extends ChanceryError {
  readonly code = 'CHANCERY_API_HEADERS_TOO_LARGE';
  constructor() {
    super('the request line and headers are larger than the server accepts (16 KiB)');
  }
}

/** The request did not arrive in full within the server's request timeout. */
export class RequestTimeoutError extends ChanceryError {
  readonly code = 'CHANCERY_API_REQUEST_TIMEOUT';
  constructor() {
    super('the request did not arrive in time');
  }
}

/** A route exists for the URL, but not with this method; `allowed` lists the methods it has. */
export class MethodNotAllowedError extends ChanceryError {
  readonly code = 'CHANCERY_API_METHOD_NOT_ALLOWED';
  constructor(
    readonly method: string,
    readonly allowed: readonly string[],
  ) {
    super(`${clip(method, 16)} is not allowed here; this URL takes ${allowed.join(', ')}`);
  }
}

/** The body's Content-Type is not one the API parses. */
export class UnsupportedMediaTypeError extends ChanceryError {
  readonly code = 'CHANCERY_API_UNSUPPORTED_MEDIA_TYPE';
  readonly field = 'Content-Type';
  constructor(
    readonly contentType: string | undefined,
    readonly accepted: readonly string[],
  ) {
    const what = contentType === undefined ? 'a missing or unreadable Content-Type' : `Content-Type ${excerpt(contentType)}`;
    super(`${what} is not supported; send one of ${accepted.join(', ')}`);
  }
}

/** A conditional header (`If-Match`, `If-None-Match`) or the body's `version` is unusable. */
export class InvalidPreconditionError extends ChanceryError {
  readonly code = 'CHANCERY_API_INVALID_PRECONDITION';
  constructor(
    readonly field: 'If-Match' | 'If-None-Match' | 'version',
    reason: string,
  ) {
    super(reason);
  }
}

/** A query parameter is out of range or not one of the allowed values. */
export class InvalidQueryError extends ChanceryError {
  readonly code = 'CHANCERY_API_INVALID_QUERY';
  constructor(
    readonly field: string,
    reason: string,
  ) {
    super(reason);
  }
}

/** A name in the URL path (`mesh`, `name`, `node`, `kid`) is not one anything can have: nothing was read or written. */
export class InvalidPathNameError extends ChanceryError {
  readonly code = 'CHANCERY_API_INVALID_NAME';
  constructor(
    readonly field: string,
    reason: string,
  ) {
    super(reason);
  }
}

/** No session for the node on this instance (it may be connected to another instance). */
export class SessionNotFoundError extends ChanceryError {
  readonly code = 'CHANCERY_API_SESSION_NOT_FOUND';
  readonly field = 'node';
  constructor(
    readonly node: string,
    where: 'on this instance' | 'on any live instance' = 'on this instance',
  ) {
    super(`no session for node ${clip(node, 128)} ${where}`);
  }
}

/** No route for the method and URL. */
export class RouteNotFoundError extends ChanceryError {
  readonly code = 'CHANCERY_API_ROUTE_NOT_FOUND';
  constructor(
    readonly method: string,
    readonly url: string,
  ) {
    super(`no route for ${clip(method, 16)} ${excerpt(url)}`);
  }
}

/** The request carries no valid API token (the API authenticates callers: `--api-auth token`). */
export class UnauthenticatedError extends ChanceryError {
  readonly code = 'CHANCERY_API_UNAUTHENTICATED';
  constructor(reason: string) {
    super(reason);
  }
}

/** The caller's role does not allow the call; nothing was changed. */
export class ForbiddenError extends ChanceryError {
  readonly code = 'CHANCERY_API_FORBIDDEN';
  constructor(
    readonly caller: { readonly name: string; readonly role: string },
    reason: string,
  ) {
    super(`${caller.role} "${caller.name}" may not do this: ${reason}`);
  }
}

/** One resource of a `POST /apply` that was refused: its position in `items`, what it names, and why. */
export interface RefusedDocument {
  readonly index: number;
  readonly type?: string;
  readonly mesh?: string;
  readonly name?: string;
  /** The status its own PUT would have been answered with. */
  readonly status: number;
  readonly code: string;
  /** The field, from the body: `items[3].networking.inbound[0].port`. */
  readonly field?: string;
  readonly reason: string;
}

/** A `POST /apply` in which some resources were refused: none of them was written. */
export class ApplyRefusedError extends ChanceryError {
  readonly code = 'CHANCERY_API_APPLY_REFUSED';
  readonly field: string;
  constructor(
    total: number,
    readonly items: readonly RefusedDocument[],
  ) {
    const [first] = items;
    super(`${items.length} of ${total} resources refused, nothing applied; the first: ${first?.field ?? `items[${first?.index}]`}: ${first?.reason}`);
    this.field = first?.field ?? 'items';
  }
}

/** Something failed that the API has no better answer for; the cause is logged, not sent. */
export class InternalError extends ChanceryError {
  readonly code = 'CHANCERY_API_INTERNAL';
  constructor(options?: { cause?: unknown }) {
    super('internal error; the server log has the details', options);
  }
}

export type ApiError =
  | InvalidResourceError
  | PathMismatchError
  | MalformedBodyError
  | MalformedRequestError
  | UrlTooLongError
  | HeadersTooLargeError
  | RequestTimeoutError
  | MethodNotAllowedError
  | BodyTooLargeError
  | UnsupportedMediaTypeError
  | InvalidPreconditionError
  | InvalidQueryError
  | InvalidPathNameError
  | SessionNotFoundError
  | RouteNotFoundError
  | UnauthenticatedError
  | ForbiddenError
  | ApplyRefusedError
  | InternalError;
