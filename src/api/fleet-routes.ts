import type { FastifyInstance } from 'fastify';
import type { ApiBackend } from './api-backend.js';

/**
 * The instances sharing this store (issue 4): `GET /instances`, each with its addresses, when
 * it started, when it last saved its session records, and how many sessions it serves; `self`
 * names the instance answering.
 */
export function registerFleetRoutes(app: FastifyInstance, { instanceId, sessions, fleet }: Pick<ApiBackend, 'instanceId' | 'sessions' | 'fleet'>): void {
  app.get('/instances', async () => {
    const [instances, others] = await Promise.all([fleet.instances(), fleet.others()]);
    const counts = new Map<string, number>([[instanceId, sessions.summaries().length]]);
    for (const session of others) counts.set(session.instance, (counts.get(session.instance) ?? 0) + 1);
    return { self: instanceId, items: instances.map((instance) => ({ ...instance, sessions: counts.get(instance.id) ?? 0 })) };
  });
}
