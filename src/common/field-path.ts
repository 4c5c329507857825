import { excerpt } from './excerpt.js';

const IDENTIFIER = /^[A-Za-z_$][\w$]{0,62}$/;

/**
 * The path of field `key` under `parent`, as refusals name fields: `a.b` for a plain key,
 * `a["kuma.io/zone"]` for one that would read ambiguously; a long key is cut, as the path is
 * repeated in the field, the reason and the issues of a refusal.
 */
export function fieldPath(parent: string, key: string): string {
  if (!IDENTIFIER.test(key)) return `${parent}[${excerpt(key)}]`;
  return parent === '' ? key : `${parent}.${key}`;
}
