import { WRITE_HEADERS } from '../api/index.js';
import { NODES_PAGE, type PreviewAnswer } from '../changes/index.js';
import type { ApiAnswer, ApiClient } from './api-client.js';
import type { CliIo } from './cli-io.js';
import { ApiRejectedError, PreviewMovedError, UsageError } from './errors.js';
import { formatDocument } from './format-output.js';
import { previewDiff, previewText } from './preview-output.js';
import { EXIT } from './report-error.js';
import { printWarnings } from './write-outcome.js';

/** The flags of the commands that write (`apply`, `delete`, `revert`) for changing safely (issue 31). */
export const CHANGE_OPTIONS = {
  'dry-run': { type: 'boolean' },
  output: { type: 'string', short: 'o' },
  'fail-on-warnings': { type: 'boolean' },
} as const;

export const CHANGE_HELP = `  --dry-run
      write nothing: print what the write would do to each affected node (per xDS type, the
      resources added, changed and removed), its warnings, and a summary
  -o, --output json|diff
      with --dry-run: the whole answer as JSON, or each changed resource as a diff of its JSON
  --fail-on-warnings
      refuse the write, writing nothing (exit 1), if it has warnings: a service losing its last
      endpoint while nodes call it, a connected node's Dataplane deleted`;

export type ChangeFlags = { readonly [K in keyof typeof CHANGE_OPTIONS]?: K extends 'output' ? string : boolean };

/** Whether the command line asks for a preview or a checked write (any of the flags above). */
export function asksForChange(flags: ChangeFlags): boolean {
  return flags['dry-run'] === true || flags['fail-on-warnings'] === true || flags.output !== undefined;
}

/** One write route's request: `?dryRun=true` or `?failOnWarnings=true` is added to `path`. */
export interface ChangeRequest {
  readonly method: 'PUT' | 'POST' | 'DELETE';
  readonly path: string;
  readonly body?: unknown;
}

/**
 * A write, previewed (`--dry-run`: printed as text, `-o json` or `-o diff`) or made, refused
 * by the server if it has warnings with `--fail-on-warnings`: the server checks them on the
 * revision it then writes onto, so nothing can land between the check and the write. Resolves
 * with the exit code, and the answer of a write that was made, for the command to report.
 */
export async function runChange(request: ChangeRequest, flags: ChangeFlags, client: ApiClient, io: CliIo): Promise<{ readonly code: number; readonly written?: ApiAnswer }> {
  const output = flags.output;
  if (output !== undefined && output !== 'json' && output !== 'diff') throw new UsageError(`-o must be json or diff; got "${output}"`);
  if (output !== undefined && flags['dry-run'] !== true) throw new UsageError('-o json|diff shows a dry run: add --dry-run');
  if (flags['dry-run'] === true) {
    const answer = await preview(client, request, output === undefined ? 'first' : 'all');
    if (output === 'json') io.stdout.write(formatDocument(answer, 'json'));
    else if (output === 'diff') io.stdout.write(previewDiff(answer));
    else io.stdout.write(previewText(answer));
    printWarnings(answer.warnings.map((warning) => warning.message), io.stderr);
    return { code: flags['fail-on-warnings'] === true && answer.warnings.length > 0 ? EXIT.failed : EXIT.ok };
  }
  const checked = flags['fail-on-warnings'] === true ? `${request.path.includes('?') ? '&' : '?'}failOnWarnings=true` : '';
  try {
    const written = await client.request(request.method, `${request.path}${checked}`, request.body);
    return { code: EXIT.ok, written };
  } catch (error) {
    if (!(error instanceof ApiRejectedError) || error.rejection.warnings === undefined) throw error;
    printWarnings(error.rejection.warnings.map((warning) => warning.message), io.stderr);
    io.stderr.write('Refused (--fail-on-warnings): nothing was written.\n');
    return { code: EXIT.failed };
  }
}

/** The revisions a write spans, from its answer's headers: what `--wait` and `rollout status` follow. */
export function revisionsOf(answer: ApiAnswer): { readonly from: number; readonly revision: number } | undefined {
  const revision = Number(answer.headers[WRITE_HEADERS.revision]);
  const from = Number(answer.headers[WRITE_HEADERS.from]);
  return Number.isSafeInteger(revision) && Number.isSafeInteger(from) ? { from, revision } : undefined;
}

/** The dry run's answer: its first page of nodes, or every page merged into one. */
async function preview(client: ApiClient, request: ChangeRequest, pages: 'first' | 'all'): Promise<PreviewAnswer> {
  const separator = request.path.includes('?') ? '&' : '?';
  const page = async (offset: number) =>
    (await client.request(request.method, `${request.path}${separator}dryRun=true&offset=${offset}&limit=${NODES_PAGE.max}`, request.body)).body as PreviewAnswer;
  const first = await page(0);
  if (pages === 'first') return first;
  const nodes = [...first.nodes.items];
  const resources = { ...first.resources };
  while (nodes.length < first.nodes.total) {
    const next = await page(nodes.length);
    // The store moved on between pages: the pages describe different changes.
    if (next.revision !== first.revision || next.nodes.items.length === 0) throw new PreviewMovedError(first.revision, next.revision);
    nodes.push(...next.nodes.items);
    Object.assign(resources, next.resources);
  }
  return { ...first, nodes: { items: nodes, offset: 0, limit: nodes.length, total: first.nodes.total }, resources };
}
