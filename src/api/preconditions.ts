import type { IncomingHttpHeaders } from 'node:http';
import { excerpt } from '../common/index.js';
import { asResourceVersion, type ResourceVersion } from '../store/index.js';
import { InvalidPreconditionError } from './errors.js';

/** A strong entity tag holding a version, quoted as RFC 9110 §8.8.3 writes one and `ETag` answers it: `"3"`. */
const ENTITY_TAG = /^"([1-9]\d{0,14})"$/;

/** The `ETag` of a resource version: a strong entity tag, `"3"`. */
export function etagOf(version: ResourceVersion): string {
  return `"${version}"`;
}

/**
 * The version a PUT is conditional on: `If-Match: "3"`, or `version: 3` in the
 * body — what `chancery get -o yaml` prints, so re-applying an edited copy cannot silently
 * overwrite a newer write — or `If-None-Match: *` for "create only". Undefined means
 * unconditional.
 */
export function putPrecondition(headers: IncomingHttpHeaders, bodyVersion: unknown): ResourceVersion | 'absent' | undefined {
  const ifMatch = readIfMatch(headers);
  const inBody = bodyVersion === undefined ? undefined : readBodyVersion(bodyVersion);
  const ifNoneMatch = headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() !== '*') {
      throw new InvalidPreconditionError('If-None-Match', 'only If-None-Match: * ("create only") is supported');
    }
    if (ifMatch !== undefined || inBody !== undefined) {
      throw new InvalidPreconditionError('If-None-Match', 'If-None-Match: * cannot be combined with a version to match');
    }
    return 'absent';
  }
  if (ifMatch !== undefined && inBody !== undefined && ifMatch !== inBody) {
    throw new InvalidPreconditionError('version', `the body's version ${inBody} disagrees with If-Match ${etagOf(ifMatch)}`);
  }
  return ifMatch ?? inBody;
}

/** The version a DELETE is conditional on (`If-Match`), or undefined. */
export function deletePrecondition(headers: IncomingHttpHeaders): ResourceVersion | undefined {
  if (headers['if-none-match'] !== undefined) {
    throw new InvalidPreconditionError('If-None-Match', 'If-None-Match is not supported on DELETE');
  }
  return readIfMatch(headers);
}

function readIfMatch(headers: IncomingHttpHeaders): ResourceVersion | undefined {
  const value = headers['if-match'];
  if (value === undefined) return undefined;
  const match = ENTITY_TAG.exec(value.trim());
  if (match?.[1] === undefined) {
    throw new InvalidPreconditionError('If-Match', `If-Match must be one resource version as the ETag gives it, in quotes: "3"; got ${excerpt(value)}`);
  }
  return asResourceVersion(Number(match[1]));
}

function readBodyVersion(value: unknown): ResourceVersion {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidPreconditionError('version', `version must be a resource version (a positive integer); got ${excerpt(value)}`);
  }
  return asResourceVersion(value);
}
