import type { FastifyInstance } from 'fastify';
import type { MetricsSource } from './api-backend.js';

/** `GET /metrics`: every metric in the Prometheus text format, with its versioned content type. */
export function registerMetricsRoutes(app: FastifyInstance, metrics: MetricsSource): void {
  app.get('/metrics', async (_request, reply) => reply.type(metrics.contentType).send(await metrics.text()));
}
