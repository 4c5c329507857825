import type { ErrorBody } from '../api/index.js';
import { ChanceryError } from '../common/index.js';

/** The command line is wrong: unknown command or flag, missing argument, bad value. Exit 2. */
export class UsageError extends ChanceryError {
  readonly code = 'CHANCERY_CLI_USAGE';
}

/** No HTTP answer from the API at `address`: refused, timed out, not resolvable. */
export class ApiUnreachableError extends ChanceryError {
  readonly code = 'CHANCERY_CLI_UNREACHABLE';
  constructor(
    readonly address: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot reach Chancery at ${address}: ${reason}`, options);
  }
}

/** An API error answer; `code` is any string, as the server may be newer than this CLI. */
export type RejectionBody = Omit<ErrorBody, 'code'> & { readonly code: string };

/** The API answered 4xx or 5xx; `rejection` is what it said. */
export class ApiRejectedError extends ChanceryError {
  readonly code = 'CHANCERY_CLI_REJECTED';
  constructor(
    readonly status: number,
    readonly rejection: RejectionBody,
  ) {
    super(`${rejection.code}: ${rejection.reason}`);
  }
}

/** `run` could not start the control plane: a port in use, an address it cannot bind. */
export class StartFailedError extends ChanceryError {
  readonly code = 'CHANCERY_CLI_START_FAILED';
  constructor(cause: unknown) {
    super(`could not start: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** An answer that is not the API's JSON: another server on the port, or a proxy's error page. */
export class UnexpectedResponseError extends ChanceryError {
  readonly code = 'CHANCERY_CLI_UNEXPECTED_RESPONSE';
  constructor(
    readonly address: string,
    readonly status: number,
    readonly text: string,
  ) {
    super(`${address} answered HTTP ${status}, which is not the Chancery API: ${text.slice(0, 200)}`);
  }
}

/** A file given to `apply -f` cannot be read, parsed, or addressed (no type or name). */
export class ManifestError extends ChanceryError {
  readonly code = 'CHANCERY_CLI_INVALID_MANIFEST';
  constructor(
    /** `resources.yaml`, `resources.yaml: resource 3` */
    readonly source: string,
    readonly field: string | undefined,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${source}: ${field === undefined ? '' : `field ${field}: `}${reason}`, options);
  }
}

/** A dry run read in pages found the store at another revision from one page to the next: the pages describe different changes. */
export class PreviewMovedError extends ChanceryError {
  readonly code = 'CHANCERY_CLI_PREVIEW_MOVED';
  constructor(
    readonly revision: number,
    readonly now: number,
  ) {
    super(`the store moved from revision ${revision} to ${now} while the dry run was read page by page: run it again`);
  }
}
