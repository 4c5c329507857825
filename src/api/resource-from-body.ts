import { type Resource, type ResourceKey, type Valid, validate } from '../mesh/index.js';
import { InvalidResourceError, MalformedBodyError, PathMismatchError } from './errors.js';

export interface BodyResource {
  readonly resource: Valid<Resource>;
  /** The body's `version`, if any: a precondition, never stored. */
  readonly version: unknown;
}

/**
 * Reads a PUT body as the resource its URL names. The path is the identity: `type`, `mesh`
 * and `name` may be left out of the body and are filled from it, and a body that states
 * a different one is refused naming that field, before validation runs.
 */
export function resourceFromBody(body: unknown, key: ResourceKey): BodyResource {
  if (body === undefined) throw new MalformedBodyError('a PUT needs a body: one resource as JSON or YAML');
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidResourceError([{ path: '', reason: 'must be one resource (an object with type, name, …)' }]);
  }
  const { type, mesh, name, version, ...rest } = body as Record<string, unknown>;
  agree('type', type, key.type);
  agree('name', name, key.name);
  if (key.type !== 'Mesh') agree('mesh', mesh, key.mesh);
  // A Mesh has no `mesh` field: one in the body goes on to validation, which refuses it.
  const identity =
    key.type === 'Mesh'
      ? { type: key.type, name: key.name, ...(mesh !== undefined && { mesh }) }
      : { type: key.type, mesh: key.mesh, name: key.name };
  const result = validate({ ...identity, ...rest });
  if (!result.ok) throw new InvalidResourceError(result.issues);
  return { resource: result.resource, version };
}

function agree(field: 'type' | 'mesh' | 'name', inBody: unknown, inPath: string): void {
  if (inBody !== undefined && inBody !== inPath) throw new PathMismatchError(field, inBody, inPath);
}
