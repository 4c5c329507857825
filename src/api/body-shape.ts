import { BodyTooLargeError, MalformedBodyError } from './errors.js';

/**
 * How deep a request body may nest. A resource nests five levels (a tag of an inbound of a
 * Dataplane's networking); deeper input is refused before anything walks it recursively.
 */
export const MAX_BODY_DEPTH = 32;

/**
 * Refuses a parsed body that nests deeper than `MAX_BODY_DEPTH` (`MalformedBodyError`) or that,
 * written out as JSON, would be longer than `maxBytes` (`BodyTooLargeError`): what YAML
 * aliases make of a small body, the same limit as the body's own (issue 11: anchors made a
 * 100 KB body a 9 MB resource). It walks iteratively and stops at the first limit crossed, so a
 * cyclic value (a YAML alias loop) or one nested a million deep costs at most `maxBytes` steps.
 */
export function checkBodyShape(body: unknown, maxBytes: number): void {
  const pending: Array<readonly [unknown, number]> = [[body, 0]];
  // Each step adds at least one, so the walk ends after at most `maxBytes` steps.
  let bytes = 0;
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, depth] = next;
    bytes += sizeOf(value);
    if (bytes > maxBytes) throw new BodyTooLargeError(maxBytes, 'expanded');
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= MAX_BODY_DEPTH) throw new MalformedBodyError(`the body nests deeper than ${MAX_BODY_DEPTH} levels`);
    if (Array.isArray(value)) {
      for (const item of value) pending.push([item, depth + 1]);
      continue;
    }
    for (const [key, item] of Object.entries(value)) {
      bytes += key.length + 4;
      pending.push([item, depth + 1]);
    }
  }
}

/** The JSON length of a scalar, and a collection's brackets: at least 1. */
function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length + 2;
  if (typeof value === 'object' && value !== null) return 2;
  return String(value).length;
}
