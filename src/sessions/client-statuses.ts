import type { ClientResource, ClientStatus, TypeReport } from '../xds/index.js';
import type { SessionRegistry } from './session-registry.js';

/**
 * What CSDS reports of each session that holds a stream: per type, every resource it was last
 * sent with where it stands (ACKed, NACKed, not answered yet), and each name it asked for that
 * was never sent. A session without a stream holds nothing Chancery can vouch for.
 */
export function* clientStatuses(registry: Pick<SessionRegistry, 'sessions'>): Generator<ClientStatus> {
  for (const session of registry.sessions()) {
    const { phase } = session.actor.getSnapshot().context;
    if (!('ledger' in phase)) continue;
    const resources: ClientResource[] = [];
    for (const typeUrl of phase.ledger.requestedTypes()) resources.push(...resourcesOf(typeUrl, phase.ledger.report(typeUrl)!, phase.stream.openedAt));
    yield { node: session.node, resources };
  }
}

function resourcesOf(typeUrl: string, report: TypeReport, openedAt: number): ClientResource[] {
  const { sent, acked, nacked } = report;
  const sentNames = new Set(sent?.resources.map((resource) => resource.name));
  const unsent = [...report.subscription.names].filter((name) => !sentNames.has(name)).sort();
  const asked = unsent.map((name): ClientResource => ({ typeUrl, name, version: '', updatedAt: openedAt, configStatus: 'NOT_SENT', clientStatus: 'REQUESTED' }));
  if (sent === undefined) return asked;
  // A reconnecting SotW client that holds the version was not sent it again; its ledger records it as ACKed.
  const synced = acked?.nonce === sent.nonce;
  const refused = nacked !== undefined && nacked.nonce === sent.nonce;
  const configStatus = refused ? 'ERROR' : synced ? 'SYNCED' : 'STALE';
  const clientStatus = refused ? 'NACKED' : synced ? 'ACKED' : 'REQUESTED';
  const error = refused ? { message: nacked.message, at: nacked.at } : undefined;
  return [
    ...sent.resources.map((resource): ClientResource => ({
      typeUrl,
      name: resource.name,
      // Delta: each resource has its own version; SotW: the response's.
      version: report.perResourceVersions ? resource.version : sent.version,
      any: resource.any,
      updatedAt: sent.at,
      configStatus,
      clientStatus,
      ...(error !== undefined && { error }),
    })),
    ...asked,
  ];
}
