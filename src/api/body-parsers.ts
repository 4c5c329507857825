import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parse as parseYaml } from 'yaml';
import { MalformedBodyError, UnsupportedMediaTypeError } from './errors.js';

const YAML_MEDIA_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml'];

/** The Content-Types a PUT body may have. */
export const ACCEPTED_MEDIA_TYPES: readonly string[] = ['application/json', ...YAML_MEDIA_TYPES];

/**
 * Replaces fastify's parsers with ours: JSON and YAML, each turning a syntax error into
 * `MalformedBodyError`, and a catch-all that refuses every other media type. fastify
 * still enforces `bodyLimit` before a parser sees the text.
 */
export function registerBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJsonBody);
  app.addContentTypeParser(YAML_MEDIA_TYPES, { parseAs: 'string' }, parseYamlBody);
  app.addContentTypeParser('*', refuseMediaType);
}

async function parseJsonBody(_request: FastifyRequest, text: string | Buffer): Promise<unknown> {
  const source = text.toString();
  if (isBlank(source)) return undefined;
  try {
    return JSON.parse(source);
  } catch (error) {
    throw new MalformedBodyError(`invalid JSON: ${(error as Error).message}`, { cause: error });
  }
}

async function parseYamlBody(_request: FastifyRequest, text: string | Buffer): Promise<unknown> {
  const source = text.toString();
  if (isBlank(source)) return undefined;
  try {
    return parseYaml(source);
  } catch (error) {
    // The yaml package ends its first line with "at line L, column C:" and an excerpt below.
    const [summary = ''] = (error as Error).message.split('\n');
    throw new MalformedBodyError(`invalid YAML: ${summary.replace(/:$/, '')}`, { cause: error });
  }
}

async function refuseMediaType(request: FastifyRequest): Promise<never> {
  throw new UnsupportedMediaTypeError(request.headers['content-type'], ACCEPTED_MEDIA_TYPES);
}

// Clients often send a Content-Type with an empty DELETE; an empty body is no body, and a
// PUT without one is refused by the handler that needs it.
function isBlank(source: string): boolean {
  return source.trim() === '';
}
