import { readFile } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';
import { CONFIGURATION_TYPES, DEFAULT_MESH, type ConfigurationType, type ResourceKey } from '../mesh/index.js';
import { ManifestError } from './errors.js';

/** One resource read from a file, with where it came from and the API path it goes to. */
export interface ManifestEntry {
  /** `resources.yaml: resource 3` */
  readonly source: string;
  readonly key: ResourceKey & { readonly type: ConfigurationType };
  /** Sent as the PUT body as written; the server validates it. */
  readonly resource: Readonly<Record<string, unknown>>;
}

// A Dataplane or a policy can only be written into an existing mesh, so meshes go first.
const applyOrder = (type: ConfigurationType) => (type === 'Mesh' ? 0 : type === 'Dataplane' ? 1 : 2);

/**
 * Reads every resource of every file (`-` is stdin), in apply order: Meshes first, then
 * Dataplanes, then policies, each in file order. A file holds YAML documents separated by `---`, a YAML
 * list, a JSON object or a JSON array. Any file that cannot be read, parsed or addressed
 * (no type or name) fails the whole read, so nothing is applied from a broken file.
 */
export async function readManifests(files: readonly string[], stdin: AsyncIterable<string | Uint8Array>): Promise<ManifestEntry[]> {
  const entries: ManifestEntry[] = [];
  for (const file of files) {
    const source = file === '-' ? 'stdin' : file;
    const text = file === '-' ? await readAll(stdin) : await readText(file);
    entries.push(...parseManifest(text, source));
  }
  // Array.prototype.sort is stable: file order is kept within a type.
  return entries.sort((a, b) => applyOrder(a.key.type) - applyOrder(b.key.type));
}

/** The resources in one file's text, in file order. */
function parseManifest(text: string, source: string): ManifestEntry[] {
  return valuesOf(text, source).map((value, index) => entryOf(value, `${source}: resource ${index + 1}`));
}

function valuesOf(text: string, source: string): unknown[] {
  const trimmed = text.trimStart();
  // JSON is read as JSON first: YAML refuses some valid JSON, such as tab indentation.
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return flatten(JSON.parse(text));
    } catch (error) {
      if (source.endsWith('.json')) throw new ManifestError(source, undefined, `invalid JSON: ${(error as Error).message}`, { cause: error });
    }
  }
  const values: unknown[] = [];
  for (const document of parseAllDocuments(text)) {
    const [error] = document.errors;
    if (error !== undefined) {
      // The yaml package ends its first line with "at line L, column C:" and an excerpt below.
      const [summary = ''] = error.message.split('\n');
      throw new ManifestError(source, undefined, `invalid YAML: ${summary.replace(/:$/, '')}`, { cause: error });
    }
    values.push(...flatten(document.toJS()));
  }
  return values;
}

/** A list holds several resources; an empty document (a trailing `---`) holds none. */
function flatten(value: unknown): unknown[] {
  if (value === null || value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

function entryOf(value: unknown, source: string): ManifestEntry {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ManifestError(source, undefined, 'must be an object (one resource)');
  }
  const resource = value as Readonly<Record<string, unknown>>;
  const { type, name, mesh } = resource;
  if (typeof type !== 'string' || !(CONFIGURATION_TYPES as readonly string[]).includes(type)) {
    throw new ManifestError(source, 'type', `must be one of ${CONFIGURATION_TYPES.map((each) => `"${each}"`).join(', ')}`);
  }
  if (typeof name !== 'string' || name === '') throw new ManifestError(source, 'name', 'is required');
  if (type === 'Mesh') return { source, key: { type, mesh: name, name }, resource };
  const configuration = type as ConfigurationType;
  // As kubectl puts a resource without a namespace in `default`.
  if (mesh !== undefined && (typeof mesh !== 'string' || mesh === '')) throw new ManifestError(source, 'mesh', 'must be a mesh name');
  return { source, key: { type: configuration, mesh: mesh ?? DEFAULT_MESH, name }, resource };
}

async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new ManifestError(file, undefined, `cannot read: ${(error as Error).message}`, { cause: error });
  }
}

async function readAll(stream: AsyncIterable<string | Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
