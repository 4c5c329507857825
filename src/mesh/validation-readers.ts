import { fieldPath } from '../common/index.js';
import { DNS_LABEL_RULE, isDnsLabel } from './dns-label.js';
import { RESOURCE_LIMITS } from './limits.js';

/**
 * The pieces every validator reads input with (validate.ts, validate-policy.ts): an issue list
 * that keeps going past the first problem, and readers that record an issue and return undefined.
 */

export interface ValidationIssue {
  /** A property path into the input, `networking.inbound[0].port`; `''` is the input itself. */
  readonly path: string;
  readonly reason: string;
}

export type Fields = Readonly<Record<string, unknown>>;

/** The issues of one validation, as they are found; readers record them here and go on. */
export class Issues {
  readonly #list: ValidationIssue[] = [];
  #count = 0;

  get count(): number {
    return this.#count;
  }

  /** Records an issue; returns undefined so a reader can `return issues.add(…)`. */
  add(path: string, reason: string): undefined {
    this.#count += 1;
    if (this.#list.length < RESOURCE_LIMITS.issues) this.#list.push(Object.freeze({ path, reason }));
    return undefined;
  }

  /** The issues kept, and one counting the rest: a body of 100,000 unknown keys answers in a few KB. */
  listed(): readonly ValidationIssue[] {
    const untold = this.#count - this.#list.length;
    const list = untold === 0 ? this.#list : [...this.#list, { path: '', reason: `and ${untold} more issues` }];
    return Object.freeze(list);
  }
}

/** A list of at most `max` entries, each read by `readItem`; an empty list when left out. */
export function readList<T>(
  value: unknown,
  path: string,
  max: number,
  issues: Issues,
  readItem: (item: unknown, path: string, issues: Issues) => T | undefined,
): readonly T[] | undefined {
  if (value === undefined) return Object.freeze([]);
  if (!Array.isArray(value)) return issues.add(path, 'must be an array');
  if (value.length > max) return issues.add(path, `must have at most ${max} entries; it has ${value.length}`);
  const items: T[] = [];
  let complete = true;
  value.forEach((item: unknown, index) => {
    const read = readItem(item, `${path}[${index}]`, issues);
    if (read === undefined) complete = false;
    else items.push(read);
  });
  return complete ? Object.freeze(items) : undefined;
}

export function readObject(value: unknown, path: string, issues: Issues): Fields | undefined {
  if (value === undefined && path !== '') return issues.add(path, 'is required');
  return isFields(value) ? value : issues.add(path, 'must be an object');
}

export function readLabel(value: unknown, path: string, issues: Issues): string | undefined {
  if (value === undefined) return issues.add(path, 'is required');
  if (typeof value !== 'string') return issues.add(path, 'must be a string');
  return isDnsLabel(value) ? value : issues.add(path, DNS_LABEL_RULE);
}

export function rejectUnknown(fields: Fields, known: readonly string[], path: string, what: string, issues: Issues): void {
  for (const key of Object.keys(fields)) {
    if (!known.includes(key)) issues.add(fieldPath(path, key), `unknown field; ${what} has ${known.join(', ')}`);
  }
}

export function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
