import type { FastifyInstance } from 'fastify';
import { clip, excerpt, EXCERPT_LENGTH } from '../common/index.js';
import { InvalidQueryError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The query parameters the route takes (`takes(…)`); any other is refused. */
    readonly query?: readonly string[];
  }
}

/** A query string as fastify parses it: a repeated parameter becomes an array. */
export type Query = Readonly<Record<string, unknown>>;

/** The largest integer a query parameter may hold: 15 digits, below 2^53, so it stays exact. */
const INTEGER = /^\d{1,15}$/;

/**
 * A route's options declaring the query parameters it takes: `app.get(url, takes('revision'), …)`.
 * A route registered without it takes none.
 */
export function takes(...parameters: readonly string[]): { readonly config: { readonly query: readonly string[] } } {
  return { config: { query: parameters } };
}

/**
 * Refuses, on every route, a query parameter the route does not declare (`takes`), naming it:
 * a typo must not be ignored, and a parameter a newer server understands (`?dryRun=true`) must
 * not be taken by an older one as a plain write. Registered after the API's gate, so a caller
 * without a token learns nothing of the routes.
 */
export function registerQueryCheck(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    // No route: the not-found handler answers, whatever the query says.
    if (request.is404) return;
    onlyKnown(request.query as Query, request.routeOptions.config.query ?? []);
  });
}

function onlyKnown(query: Query, known: readonly string[]): void {
  for (const field in query) {
    if (!known.includes(field)) {
      const route = known.length === 0 ? 'takes no query parameters' : `takes ${known.join(', ')}`;
      throw new InvalidQueryError(clip(field, EXCERPT_LENGTH), `unknown query parameter ${excerpt(field)}: this route ${route}`);
    }
  }
}

/** A parameter given at most once; undefined when absent. */
export function single(query: Query, field: string): string | undefined {
  const value = query[field];
  if (value === undefined || typeof value === 'string') return value;
  throw new InvalidQueryError(field, `${field} may be given once`);
}

/** A whole number of at least `min` (and at most `max`, when given); undefined when absent. */
export function integer(query: Query, field: string, range: { readonly min: number; readonly max?: number }): number | undefined {
  const value = single(query, field);
  if (value === undefined) return undefined;
  const n = INTEGER.test(value) ? Number(value) : Number.NaN;
  const { min, max } = range;
  if (!(n >= min) || (max !== undefined && n > max)) {
    const expected = max === undefined ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`;
    throw new InvalidQueryError(field, `${field} must be ${expected}; got ${excerpt(value)}`);
  }
  return n;
}

/** `true` or `false`; undefined when absent. */
export function flag(query: Query, field: string): boolean | undefined {
  const value = single(query, field);
  if (value === undefined) return undefined;
  if (value === 'true' || value === 'false') return value === 'true';
  throw new InvalidQueryError(field, `${field} must be true or false; got ${excerpt(value)}`);
}
