import { excerpt } from '../excerpt.js';
import { keyOf, validate, type ResourceKey } from '../mesh/index.js';
import { asResourceVersion, describeKey, type ResourceVersion, type Write } from '../store/index.js';
import { InvalidResourceError, MalformedBodyError } from './errors.js';

/** The most resources one change may hold. */
export const CHANGE_ITEMS = 10_000;

/**
 * Reads `POST /changes`'s body, `{ "items": [resource, …] }`: every resource validated as a PUT
 * would validate it, each issue's path naming its item (`items[2].networking.address`), and a
 * `version` in one a precondition, as for a PUT. A change names each resource once.
 */
export function writesFromBody(body: unknown): Write[] {
  if (body === undefined) throw new MalformedBodyError('a change needs a body: { "items": [resource, …] } as JSON or YAML');
  const items = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>)['items'] : undefined;
  if (!Array.isArray(items) || items.length === 0 || items.length > CHANGE_ITEMS) {
    throw new InvalidResourceError([{ path: 'items', reason: `must be a list of 1 to ${CHANGE_ITEMS} resources` }]);
  }
  const seen = new Map<string, number>();
  return items.map((item, i): Write => {
    // A `version` is a precondition, never stored: validation sees the resource without it.
    const isObject = typeof item === 'object' && item !== null && !Array.isArray(item);
    const { version, ...fields } = isObject ? (item as Record<string, unknown>) : {};
    const result = validate(isObject ? fields : item);
    if (!result.ok) throw new InvalidResourceError(result.issues.map(({ path, reason }) => ({ path: path === '' ? `items[${i}]` : `items[${i}].${path}`, reason })));
    const key = keyOf(result.resource);
    const id = idOf(key);
    const first = seen.get(id);
    if (first !== undefined) throw new InvalidResourceError([{ path: `items[${i}]`, reason: `names ${describeKey(key)} again, as items[${first}] did` }]);
    seen.set(id, i);
    return { kind: 'upserted', resource: result.resource, expected: expectedOf(version, i) };
  });
}

/** An item's `version`: what the resource must be at for it to be written, as a PUT body's. */
function expectedOf(version: unknown, index: number): ResourceVersion | undefined {
  if (version === undefined) return undefined;
  if (typeof version === 'number' && Number.isSafeInteger(version) && version >= 1) return asResourceVersion(version);
  throw new InvalidResourceError([{ path: `items[${index}].version`, reason: `must be a resource version (a positive integer); got ${excerpt(version)}` }]);
}

function idOf(key: ResourceKey): string {
  return `${key.type}\0${key.mesh}\0${key.name}`;
}
