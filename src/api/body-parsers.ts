import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkBodyShape } from './body-shape.js';
import { duplicateJsonKey, duplicateKeyError } from './duplicate-keys.js';
import { MalformedBodyError, UnsupportedMediaTypeError } from './errors.js';
import { parseYaml } from './yaml-body.js';

const YAML_MEDIA_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml'];

/** The Content-Types a PUT body may have. */
export const ACCEPTED_MEDIA_TYPES: readonly string[] = ['application/json', ...YAML_MEDIA_TYPES];

/**
 * Replaces fastify's parsers with ours: JSON and YAML, each turning a syntax error or a key
 * given twice into `MalformedBodyError` and checking the parsed body's depth and expanded size (body-shape.ts),
 * and a catch-all that refuses every other media type. fastify still enforces `bodyLimit`
 * before a parser sees the text. A DELETE with a body is refused: it would be ignored, and a
 * `version` in it taken for a precondition (as a PUT's is) would delete unconditionally.
 */
export function registerBodyParsers(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  // A route may take a larger body than the server's default (POST /apply).
  const limitOf = (request: FastifyRequest) => request.routeOptions.bodyLimit ?? bodyLimit;
  app.addContentTypeParser('application/json', { parseAs: 'string' }, async (request: FastifyRequest, text: string | Buffer) =>
    shaped(parseJson(text.toString()), limitOf(request)),
  );
  app.addContentTypeParser(YAML_MEDIA_TYPES, { parseAs: 'string' }, async (request: FastifyRequest, text: string | Buffer) => {
    const source = text.toString();
    return shaped(isBlank(source) ? undefined : parseYaml(source), limitOf(request));
  });
  app.addContentTypeParser('*', refuseMediaType);
  app.addHook('preValidation', async (request) => {
    if (request.method === 'DELETE' && request.body !== undefined) {
      throw new MalformedBodyError('a DELETE takes no body; its precondition goes in If-Match: "<version>"');
    }
  });
}

function parseJson(source: string): unknown {
  if (isBlank(source)) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(source);
  } catch (error) {
    throw new MalformedBodyError(`invalid JSON: ${(error as Error).message}`, { cause: error });
  }
  const duplicate = duplicateJsonKey(source);
  if (duplicate !== undefined) throw duplicateKeyError('JSON', duplicate);
  return body;
}

function shaped(body: unknown, bodyLimit: number): unknown {
  checkBodyShape(body, bodyLimit);
  return body;
}

async function refuseMediaType(request: FastifyRequest): Promise<never> {
  throw new UnsupportedMediaTypeError(request.headers['content-type'], ACCEPTED_MEDIA_TYPES);
}

// Clients often send a Content-Type with an empty DELETE; an empty body is no body, and a
// PUT without one is refused by the handler that needs it.
function isBlank(source: string): boolean {
  return source.trim() === '';
}
