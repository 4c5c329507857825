import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { RouteNotFoundError } from './errors.js';

/** The web UI's files: plain HTML, CSS and ES modules, served as they are (no build step). */
const UI_DIRECTORY = fileURLToPath(new URL('./ui/', import.meta.url));

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

// Everything the pages load comes from this server: nothing is fetched from the internet.
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

interface UiFile {
  readonly body: Buffer;
  readonly type: string;
}

/**
 * The web UI at `/ui`: a fleet page and a node page over the session API and its live feed.
 * The few files are read once, here, and answered from memory.
 */
export function registerUiRoutes(app: FastifyInstance): void {
  const files = readUiFiles(UI_DIRECTORY);
  const index = files.get('index.html');
  if (index === undefined) throw new Error(`the web UI has no index.html in ${UI_DIRECTORY}`);
  const answer = (reply: FastifyReply, file: UiFile) =>
    reply
      .header('content-type', file.type)
      .header('cache-control', 'no-cache')
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('x-content-type-options', 'nosniff')
      .send(file.body);

  app.get('/ui', (_request, reply) => answer(reply, index));
  app.get('/ui/', (_request, reply) => answer(reply, index));
  app.get<{ Params: { file: string } }>('/ui/:file', (request, reply) => {
    const file = files.get(request.params.file);
    if (file === undefined) throw new RouteNotFoundError(request.method, request.url);
    return answer(reply, file);
  });
}

function readUiFiles(directory: string): Map<string, UiFile> {
  const files = new Map<string, UiFile>();
  for (const name of readdirSync(directory)) {
    const type = CONTENT_TYPES[path.extname(name)];
    if (type !== undefined) files.set(name, { body: readFileSync(path.join(directory, name)), type });
  }
  return files;
}
