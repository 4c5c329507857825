import { ChanceryError } from '../chancery-error.js';
import { excerpt } from '../excerpt.js';
import type { ValidationIssue } from '../mesh/index.js';

/** The body failed resource validation; nothing was stored. `field` is the first issue's path. */
export class InvalidResourceError extends ChanceryError {
  readonly code = 'CHANCERY_API_INVALID_RESOURCE';
  readonly field: string;
  constructor(readonly issues: readonly ValidationIssue[]) {
    const first = issues[0] ?? { path: '', reason: 'invalid resource' };
    super(first.path === '' ? first.reason : `${first.path}: ${first.reason}`);
    this.field = first.path;
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

/** The body is not parseable JSON or YAML (or is empty). */
export class MalformedBodyError extends ChanceryError {
  readonly code = 'CHANCERY_API_MALFORMED_BODY';
  constructor(detail: string, options?: { cause?: unknown }) {
    super(detail, options);
  }
}

/** The body is larger than the server accepts (`bodyLimit`). */
export class BodyTooLargeError extends ChanceryError {
  readonly code = 'CHANCERY_API_BODY_TOO_LARGE';
  constructor(readonly limit: number) {
    super(`request body is larger than the limit of ${limit} bytes`);
  }
}

/** The request could not be read at all: a bad Content-Length, an undecodable URL, an over-long path. */
export class MalformedRequestError extends ChanceryError {
  readonly code = 'CHANCERY_API_MALFORMED_REQUEST';
  constructor(detail: string, options?: { cause?: unknown }) {
    super(detail, options);
  }
}

/** The body's Content-Type is not one the API parses. */
export class UnsupportedMediaTypeError extends ChanceryError {
  readonly code = 'CHANCERY_API_UNSUPPORTED_MEDIA_TYPE';
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

/** No session for the node on this instance (it may be connected to another instance). */
export class SessionNotFoundError extends ChanceryError {
  readonly code = 'CHANCERY_API_SESSION_NOT_FOUND';
  readonly field = 'node';
  constructor(
    readonly node: string,
    where: 'on this instance' | 'on any live instance' = 'on this instance',
  ) {
    super(`no session for node ${node} ${where}`);
  }
}

/** No route for the method and URL. */
export class RouteNotFoundError extends ChanceryError {
  readonly code = 'CHANCERY_API_ROUTE_NOT_FOUND';
  constructor(
    readonly method: string,
    readonly url: string,
  ) {
    super(`no route for ${excerpt(method)} ${excerpt(url)}`);
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
  | BodyTooLargeError
  | UnsupportedMediaTypeError
  | InvalidPreconditionError
  | InvalidQueryError
  | SessionNotFoundError
  | RouteNotFoundError
  | InternalError;
