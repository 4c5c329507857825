import type { FastifyInstance } from 'fastify';
import type { ApiBackend } from './api-backend.js';

/**
 * The instances sharing this store (issue 4): `GET /instances`, each with its addresses, when
 * it started, when it last saved its session records, and how many sessions it serves.
 */
export function registerFleetRoutes(app: FastifyInstance, fleet: ApiBackend['fleet']): void {
  app.get('/instances', async () => {
    const [instances, sessions] = await Promise.all([fleet.instances(), fleet.sessions()]);
    const counts = new Map<string, number>();
    for (const session of sessions) counts.set(session.instance, (counts.get(session.instance) ?? 0) + 1);
    return { items: instances.map((instance) => ({ ...instance, sessions: counts.get(instance.id) ?? 0 })) };
  });
}
