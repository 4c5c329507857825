import { resourceJson, type Resource, type Valid } from '../mesh/index.js';

/**
 * Whether two resources are the same content as the log keeps it: their chancery.v1 JSON (what
 * the SQL logs store as an event's body) is equal, maps compared whatever the order of their
 * keys. A tag map written in another order is the same resource, and writing it is a no-op.
 */
export function sameResource(a: Valid<Resource>, b: Valid<Resource>): boolean {
  return a === b || (a.type === b.type && sameJson(resourceJson(a), resourceJson(b)));
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => sameJson(item, b[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every((key) => Object.hasOwn(right, key) && sameJson(left[key], right[key]));
}
