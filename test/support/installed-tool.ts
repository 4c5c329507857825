import { accessSync, constants } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface ToolSpec {
  /** What the tests call it in messages: `a real Envoy`. */
  readonly what: string;
  /** The variable that names the executable, when set. */
  readonly env: string;
  /** Where the install command puts it, relative to the repository. */
  readonly installed: string;
  /** The name to look for on PATH, if it may come from there. */
  readonly onPath?: string;
  /** The one command a developer runs to get it. */
  readonly install: string;
}

/**
 * An executable a test file needs: the one `spec.env` names, else the one the install command
 * put under .cache, else one on PATH. Throws, naming the install command, when there is none:
 * a test file that needs it fails rather than skips.
 */
export function installedTool(spec: ToolSpec): string {
  const configured = process.env[spec.env];
  if (configured !== undefined && configured !== '') {
    if (isExecutable(configured)) return configured;
    throw new Error(`${spec.env}=${configured} is not an executable file. Install ${spec.what} with: ${spec.install}`);
  }
  const installed = path.join(ROOT, spec.installed);
  const onPath = spec.onPath === undefined ? [] : (process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, spec.onPath!));
  const found = [installed, ...onPath].find(isExecutable);
  if (found !== undefined) return found;
  const looked = [`${spec.env} is unset`, `${installed} does not exist`, ...(spec.onPath === undefined ? [] : [`no ${spec.onPath} on PATH`])];
  throw new Error(`these tests need ${spec.what} and none was found (${looked.join(', ')}). Install it with: ${spec.install}`);
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
