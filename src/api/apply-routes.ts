import type { FastifyInstance, FastifyRequest } from 'fastify';
import { APPLY_LIMITS, ChanceryError, clip, excerpt } from '../common/index.js';
import { CONFIGURATION_TYPES, keyOf, type ConfigurationType, type ResourceKey } from '../mesh/index.js';
import type { DeskWritten, ItemJson } from '../changes/index.js';
import { describeKey, MeshNotFoundError, VersionConflictError, type ResourceStore, type Write } from '../store/index.js';
import { authorOf, refusalOf } from './access.js';
import type { ApiBackend } from './api-backend.js';
import { errorResponse } from './error-response.js';
import { ApplyRefusedError, ForbiddenError, InvalidResourceError, MalformedBodyError, type RefusedDocument } from './errors.js';
import { putPrecondition } from './preconditions.js';
import { takes, type Query } from './query-params.js';
import { resourceFromBody } from './resource-from-body.js';
import { readWriteQuery, WRITE_PARAMS, type WriteAnswer } from './write-query.js';

/** What became of one resource of an apply; `unchanged`: identical to what is stored, nothing appended (issue 31). */
export type ApplyOutcome = 'created' | 'configured' | 'unchanged' | 'refused';

/** One resource of a `POST /apply` answer, in the order sent. */
export interface AppliedDocument extends ItemJson {
  readonly type: ConfigurationType;
  readonly outcome: Exclude<ApplyOutcome, 'refused'>;
  readonly version: number;
}

/** The `POST /apply` answer: every resource's outcome, the revisions the apply spans, and its warnings. */
export interface ApplyAnswer extends WriteAnswer {
  readonly items: readonly AppliedDocument[];
}

/** The most characters of a refused resource's type, mesh or name repeated in the answer: any valid one fits. */
const IDENTITY_LENGTH = 128;

/** One resource of the body, read and checked. */
interface Checked {
  readonly index: number;
  readonly key: ResourceKey & { readonly type: ConfigurationType };
  readonly write: Extract<Write, { kind: 'upserted' }>;
}

/**
 * `POST /apply` with `{ "items": [resource, …] }` (the shape `GET` of a list answers) creates or
 * replaces every resource, at most APPLY_LIMITS.items, in one append: all of them at one revision,
 * or none. Every resource is checked first (validation, its `version` precondition, its mesh,
 * the caller's meshes); if any is refused, nothing is written and the answer, 400
 * `CHANCERY_API_APPLY_REFUSED`, lists each refused one with its own code, field and reason.
 *
 * All or nothing, rather than each resource on its own, because a file is one change: half of
 * it applied is a state nobody wrote (a service's endpoints half moved, Dataplanes without the
 * Mesh they were written with), and fixing the refused resource and applying again must not
 * have to untangle what already went in. One append also makes the change one revision, so
 * each node is generated and pushed once for the whole file.
 */
export function registerApplyRoutes(app: FastifyInstance, { store, changes }: Pick<ApiBackend, 'store' | 'changes'>): void {
  // `?dryRun=true` previews the apply, and `?failOnWarnings=true` refuses one with warnings, as on every write route.
  app.post<{ Querystring: Query }>('/apply', { bodyLimit: APPLY_LIMITS.bodyBytes, ...takes(...WRITE_PARAMS) }, async (request) => {
    const asked = readWriteQuery(request.query);
    const items = itemsOf(request.body);
    const checked: Checked[] = [];
    const refusals: RefusedDocument[] = [];
    const seen = new Map<string, number>();
    for (const [index, item] of items.entries()) {
      try {
        checked.push(checkDocument(item, index, request, seen));
      } catch (error) {
        // A resource outside the caller's meshes refuses the call itself, as its PUT would.
        if (error instanceof ForbiddenError) throw error;
        refusals.push(refused(error, index, item));
      }
    }
    refusals.push(...stateRefusals(checked, store));
    if (refusals.length > 0) throw new ApplyRefusedError(items.length, refusals.sort((a, b) => a.index - b.index));
    // A Dataplane is written into a mesh live before it in the append: Meshes go first.
    const ordered = [...checked].sort((a, b) => rank(a.key.type) - rank(b.key.type) || a.index - b.index);
    const writes = ordered.map(({ write }) => write);
    const caller = authorOf(request);
    if (asked.dryRun) return changes.preview(writes, { caller, page: asked.page });
    let written: DeskWritten;
    try {
      written = await changes.write(writes, { caller, failOnWarnings: asked.failOnWarnings });
    } catch (error) {
      // Another writer changed the store since the checks: the log refused the append whole.
      if (error instanceof VersionConflictError || error instanceof MeshNotFoundError) {
        const culprit = ordered.find(({ key }) => describeKey(key) === describeKey(error.key));
        if (culprit !== undefined) throw new ApplyRefusedError(items.length, [refused(error, culprit.index, items[culprit.index])]);
      }
      throw error;
    }
    const answered: AppliedDocument[] = new Array<AppliedDocument>(items.length);
    for (const [position, { index, key }] of ordered.entries()) {
      // An upsert always has what is stored after it, written or found identical.
      const { outcome, stored } = written.written.items[position]!;
      answered[index] = { type: key.type, mesh: key.mesh, name: key.name, outcome: outcome as AppliedDocument['outcome'], version: stored!.version };
    }
    const { from, revision } = written.written;
    request.log.info({ resources: items.length, from, revision, warnings: written.warnings.length }, 'resources applied');
    return { from, revision, items: answered, warnings: written.warnings } satisfies ApplyAnswer;
  });
}

function itemsOf(body: unknown): readonly unknown[] {
  if (body === undefined) throw new MalformedBodyError('POST /apply needs a body: { "items": [resource, …] } as JSON or YAML');
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new MalformedBodyError('the body must be an object: { "items": [resource, …] }');
  const { items, ...rest } = body as Record<string, unknown>;
  const [unknown] = Object.keys(rest);
  if (unknown !== undefined) throw new MalformedBodyError(`unknown field ${excerpt(unknown)}: the body holds only "items"`);
  if (!Array.isArray(items) || items.length === 0) throw new MalformedBodyError('items must be a list of one or more resources');
  if (items.length > APPLY_LIMITS.items) throw new MalformedBodyError(`items holds ${items.length} resources; one apply takes at most ${APPLY_LIMITS.items}`);
  return items;
}

/** Reads one resource: its identity from its own fields, then validation and its precondition, as a PUT to its path. */
function checkDocument(item: unknown, index: number, request: FastifyRequest, seen: Map<string, number>): Checked {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) throw notAResource('', 'must be one resource (an object with type, name, …)');
  const { type, mesh, name } = item as Record<string, unknown>;
  if (typeof type !== 'string' || !(CONFIGURATION_TYPES as readonly string[]).includes(type)) throw notAResource('type', `must be one of ${CONFIGURATION_TYPES.map((known) => `"${known}"`).join(', ')}`);
  if (typeof name !== 'string' || name === '') throw notAResource('name', 'is required');
  if (type !== 'Mesh' && (typeof mesh !== 'string' || mesh === '')) throw notAResource('mesh', `is required: the mesh the ${type} belongs to`);
  const key = { type, mesh: type === 'Mesh' ? name : (mesh as string), name } as Checked['key'];
  const id = describeKey(key);
  const earlier = seen.get(id);
  if (earlier !== undefined) throw notAResource('name', `${id} is already items[${earlier}]: a resource appears once in an apply`);
  seen.set(id, index);
  const caller = request.caller;
  if (caller !== undefined) {
    const forbidden = refusalOf(caller, 'PUT', undefined, key.mesh);
    if (forbidden !== undefined) throw new ForbiddenError(caller, forbidden);
  }
  const { resource, version } = resourceFromBody(item, key);
  const expected = putPrecondition({}, version);
  return { index, key, write: { kind: 'upserted', resource, ...(expected !== undefined && { expected }) } };
}

/**
 * What the store would refuse, found against the projection so that every such resource is
 * reported, not only the first the log meets: a version that is not the stored one, a
 * Dataplane whose mesh neither exists nor is in the apply.
 */
function stateRefusals(checked: readonly Checked[], store: ResourceStore): RefusedDocument[] {
  const applied = new Set(checked.filter(({ key }) => key.type === 'Mesh').map(({ key }) => key.name));
  const refusals: RefusedDocument[] = [];
  for (const { index, key, write } of checked) {
    const actual = store.get(key)?.version ?? 'absent';
    if (write.expected !== undefined && write.expected !== actual) refusals.push(refused(new VersionConflictError(key, write.expected, actual), index, write.resource));
    else if (key.type === 'Dataplane' && !applied.has(key.mesh) && store.get({ type: 'Mesh', mesh: key.mesh, name: key.mesh }) === undefined) {
      refusals.push(refused(new MeshNotFoundError(key.mesh, keyOf(write.resource)), index, write.resource));
    }
  }
  return refusals;
}

/** One refused resource as the answer lists it: its position, identity (as far as it has one), and why, as its own PUT would be answered. */
function refused(error: unknown, index: number, item: unknown): RefusedDocument {
  if (!(error instanceof ChanceryError)) throw error;
  const { body, status } = errorResponse(error, { bodyLimit: APPLY_LIMITS.bodyBytes, maxPathSegment: 0 });
  const { type, mesh, name } = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
  return {
    index,
    ...(typeof type === 'string' && { type: clip(type, IDENTITY_LENGTH) }),
    ...(typeof mesh === 'string' && { mesh: clip(mesh, IDENTITY_LENGTH) }),
    ...(typeof name === 'string' && { name: clip(name, IDENTITY_LENGTH) }),
    status,
    code: body.code,
    // The resource is its own PUT's whole body: a field of `body` is the item itself.
    ...(body.field !== undefined && { field: `items[${index}]${body.field === '' || body.field === 'body' ? '' : `.${body.field}`}` }),
    reason: body.reason,
  };
}

/** A resource of the body that cannot be read as one, refused as its PUT would be: naming the field. */
function notAResource(path: string, reason: string): InvalidResourceError {
  return new InvalidResourceError([{ path, reason }]);
}

function rank(type: ConfigurationType): number {
  return type === 'Mesh' ? 0 : 1;
}
