import { InvalidIdentityRequestError } from '../identity/index.js';

/** A request body's fields: an object with only `known` ones, or nothing at all. */
export function bodyFields(body: unknown, known: readonly string[]): Readonly<Record<string, unknown>> {
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidIdentityRequestError('', `the body must be an object${known.length === 0 ? ', or empty' : ` with ${known.join(', ')}`}`);
  }
  const unknown = Object.keys(body).find((field) => !known.includes(field));
  if (unknown !== undefined) {
    throw new InvalidIdentityRequestError(unknown, `is not a field of this request, which takes ${known.length === 0 ? 'no body' : known.join(', ')}`);
  }
  return body as Readonly<Record<string, unknown>>;
}
