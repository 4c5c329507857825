import { excerpt } from '../common/index.js';
import { InvalidIdentityRequestError } from '../identity/index.js';

/** A POST body's fields, as `fieldsOf` checked them. */
export type Fields = Readonly<Record<string, unknown>>;

/**
 * A POST body's fields: an object with only `known` ones, or no body at all. Each field is then
 * read by its type (`text`, `textList`): a value of another type is refused naming the field,
 * never coerced (`"name": 123` is not the name "123").
 */
export function fieldsOf(body: unknown, known: readonly string[]): Fields {
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidIdentityRequestError('body', `must be an object${known.length === 0 ? ', or empty' : ` with ${known.join(', ')}`}; got ${excerpt(body)}`);
  }
  const unknown = Object.keys(body).find((field) => !known.includes(field));
  if (unknown !== undefined) {
    throw new InvalidIdentityRequestError(unknown, `is not a field of this request, which takes ${known.length === 0 ? 'no body' : known.join(', ')}`);
  }
  return body as Fields;
}

/** A required string field. */
export function text(fields: Fields, field: string): string {
  const value = fields[field];
  if (value === undefined) throw new InvalidIdentityRequestError(field, 'is required');
  if (typeof value !== 'string') throw new InvalidIdentityRequestError(field, `must be a string; got ${excerpt(value)}`);
  return value;
}

/** An optional field holding a list of strings; undefined when absent. */
export function textList(fields: Fields, field: string): readonly string[] | undefined {
  const value = fields[field];
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw new InvalidIdentityRequestError(field, `must be a list of strings; got ${excerpt(value)}`);
  const index = value.findIndex((item) => typeof item !== 'string');
  if (index !== -1) throw new InvalidIdentityRequestError(`${field}[${index}]`, `must be a string; got ${excerpt(value[index])}`);
  return value as readonly string[];
}
