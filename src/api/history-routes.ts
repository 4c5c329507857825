import type { FastifyInstance } from 'fastify';
import type { ApiToken, CertificateAuthority, Configuration, DataplaneTls, Resource, ResourceKey, ResourceType, ServiceAccountKey, SigningKey } from '../mesh/index.js';
import { asSeq, type Author, NotFoundError, type ResourceEvent, type ResourceStore, type Seq } from '../store/index.js';
import { integer, type Query, takes } from './query-params.js';

/** Events per page when `limit` is left out, and the most one page may hold. */
export const EVENTS_PAGE = { default: 100, max: 1_000 } as const;

/** One event of the log as the API answers it: flat, so tools can filter it with jq. */
export interface EventJson {
  readonly seq: number;
  readonly at: string;
  readonly kind: ResourceEvent['kind'];
  readonly type: ResourceType;
  readonly mesh: string;
  readonly name: string;
  /** The resource's version after the event. */
  readonly version: number;
  readonly by: Author;
  /** The resource as written, without secrets (a key's private half, a token's hash); only on `upserted`. */
  readonly resource?: ShownResource;
}

/** A resource as the API shows it: secrets left out. */
export type ShownResource =
  | Configuration
  | ServiceAccountKey
  | DataplaneTls
  | Omit<SigningKey, 'privateKey'>
  | Omit<ApiToken, 'secretHash'>
  | Omit<CertificateAuthority, 'privateKey'>;

/** A page of events; `next` is the `after` that reads the following page. */
export interface EventsPage {
  readonly items: readonly EventJson[];
  readonly next: number;
}

/** A page of one resource's events; `compactedThrough` says its events up to that seq are gone. */
export interface HistoryPage extends EventsPage {
  readonly compactedThrough?: number;
}

interface Page {
  readonly after: Seq;
  readonly limit: number;
}

/**
 * The event log over HTTP (issue 3): `GET /events?after=SEQ&limit=N`, every event in sequence
 * order, for audit and tools, and `GET …/history?after=SEQ&limit=N`, the retained events of
 * one Mesh or Dataplane. Reading from before the retained history is 410
 * `CHANCERY_STORE_REVISION_COMPACTED` on `/events`; a resource's history just starts later.
 */
export function registerHistoryRoutes(app: FastifyInstance, store: ResourceStore): void {
  app.get<{ Querystring: Query }>('/events', takes(...PAGE), async (request): Promise<EventsPage> => {
    const { after, limit } = readPage(request.query);
    return pageOf(await store.readEvents(after, limit), after);
  });

  app.get<{ Params: { mesh: string }; Querystring: Query }>('/meshes/:mesh/history', takes(...PAGE), async (request) =>
    history(store, { type: 'Mesh', mesh: request.params.mesh, name: request.params.mesh }, request.query),
  );

  app.get<{ Params: { mesh: string; name: string }; Querystring: Query }>('/meshes/:mesh/dataplanes/:name/history', takes(...PAGE), async (request) =>
    history(store, { type: 'Dataplane', mesh: request.params.mesh, name: request.params.name }, request.query),
  );
}

/** One resource's retained events, a page at a time; 404 for a resource that never was nor is. */
export async function history(store: ResourceStore, key: ResourceKey, query: Query): Promise<HistoryPage> {
  const { after, limit } = readPage(query);
  const { horizon, events } = await store.history(key, after, limit);
  // Nothing retained and nothing now: a typo in the name, not an empty history.
  if (events.length === 0 && after <= horizon && store.get(key) === undefined) throw new NotFoundError(key);
  return { ...pageOf(events, after), ...(horizon > 0 && { compactedThrough: horizon }) };
}

/** The query parameters of a page of events. */
export const PAGE = ['after', 'limit'] as const;

function readPage(query: Query): Page {
  return {
    after: asSeq(integer(query, 'after', { min: 0 }) ?? 0),
    limit: integer(query, 'limit', { min: 1, max: EVENTS_PAGE.max }) ?? EVENTS_PAGE.default,
  };
}

function pageOf(events: readonly ResourceEvent[], after: Seq): EventsPage {
  return { items: events.map(eventJson), next: events.at(-1)?.seq ?? after };
}

function eventJson(event: ResourceEvent): EventJson {
  const { seq, at, kind, key, version, by } = event;
  const json = { seq, at, kind, type: key.type, mesh: key.mesh, name: key.name, version, by };
  return event.kind === 'upserted' ? { ...json, resource: withoutSecrets(event.resource) } : json;
}

/** What of a resource the API may show: a signing key or CA without its private half, an API token without its hash. */
function withoutSecrets(resource: Resource): ShownResource {
  if (resource.type === 'SigningKey' || resource.type === 'CertificateAuthority') {
    const { privateKey: _secret, ...shown } = resource;
    return shown;
  }
  if (resource.type === 'ApiToken') {
    const { secretHash: _secret, ...shown } = resource;
    return shown;
  }
  return resource;
}
