import type { FastifyInstance } from 'fastify';
import { excerpt } from '../common/index.js';
import { isStatechartFormat, renderStatechart, STATECHART_FORMATS, type StatechartFormat } from '../machines/index.js';
import type { ApiBackend } from './api-backend.js';
import { InvalidQueryError } from './errors.js';
import { type Query, single, takes } from './query-params.js';

const CONTENT_TYPE: Readonly<Record<StatechartFormat, string>> = {
  json: 'application/json; charset=utf-8',
  mermaid: 'text/vnd.mermaid; charset=utf-8',
  dot: 'text/vnd.graphviz; charset=utf-8',
  svg: 'image/svg+xml; charset=utf-8',
};

/**
 * The session state chart (issue 5), generated from the machine: `GET /statechart?format=`
 * json (the default), mermaid, dot or svg, its eviction delay the running instance's.
 */
export function registerStatechartRoutes(app: FastifyInstance, { evictionGrace }: Pick<ApiBackend, 'evictionGrace'>): void {
  app.get<{ Querystring: Query }>('/statechart', takes('format'), async (request, reply) => {
    const format = single(request.query, 'format') ?? 'json';
    if (!isStatechartFormat(format)) {
      throw new InvalidQueryError('format', `format must be one of ${STATECHART_FORMATS.join(', ')}; got ${excerpt(format)}`);
    }
    return reply.type(CONTENT_TYPE[format]).send(await renderStatechart(format, evictionGrace));
  });
}
