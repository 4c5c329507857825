import { WRITE_HEADERS, type ChangeAnswer } from '../api/index.js';
import { NODES_PAGE, type PreviewAnswer } from '../changes/index.js';
import type { ApiAnswer, ApiClient } from './api-client.js';
import type { CliIo } from './cli-io.js';
import { ApiRejectedError, PreviewMovedError, UnexpectedResponseError, UsageError } from './errors.js';
import { formatDocument } from './format-output.js';
import { previewDiff, previewText } from './preview-output.js';
import { parsePositiveDuration } from './option-parsers.js';
import { EXIT } from './report-error.js';
import { waitForRollout } from './rollout-wait.js';
import { printWarnings } from './write-outcome.js';

/** The flags of the commands that write (`apply`, `delete`, `revert`) for changing safely (issue 31). */
export const CHANGE_OPTIONS = {
  'dry-run': { type: 'boolean' },
  output: { type: 'string', short: 'o' },
  'fail-on-warnings': { type: 'boolean' },
  wait: { type: 'boolean' },
  timeout: { type: 'string' },
} as const;

/** How long `--wait` waits unless told otherwise. */
const DEFAULT_TIMEOUT = '30s';

export const CHANGE_HELP = `  --dry-run
      write nothing: print what the write would do to each affected node (per xDS type, the
      resources added, changed and removed), its warnings, and a summary
  -o, --output json|diff
      with --dry-run: the whole answer as JSON, or each changed resource as a diff of its JSON
  --fail-on-warnings
      refuse the write, writing nothing (exit 1), if it has warnings: a service losing its last
      endpoint while nodes call it, a connected node's Dataplane deleted
  --wait
      once written, wait until every node the write changed (on any instance) has ACKed it; exit
      1 naming the nodes if one NACKed it or --timeout passed ('chancery rollout status')
  --timeout DURATION
      how long --wait waits [default ${DEFAULT_TIMEOUT}]`;

export type ChangeFlags = { readonly [K in keyof typeof CHANGE_OPTIONS]?: K extends 'output' | 'timeout' ? string : boolean };

/** Whether the command line asks for a preview, a checked write or a wait (any of the flags above). */
export function asksForChange(flags: ChangeFlags): boolean {
  return flags['dry-run'] === true || flags['fail-on-warnings'] === true || flags.output !== undefined || flags.wait === true || flags.timeout !== undefined;
}

/**
 * After a write was made: with `--wait`, follows its rollout across the fleet and resolves with
 * the exit code (`waitForRollout`); without it, with `code`.
 */
export async function waitIfAsked(flags: ChangeFlags, written: ApiAnswer, client: ApiClient, io: CliIo, code: number): Promise<number> {
  if (flags.wait !== true) return code;
  const revisions = revisionsOf(written);
  // A server older than the revision headers: nothing to follow.
  if (revisions === undefined) throw new UnexpectedResponseError(client.address, written.status, 'a write answered without its revisions');
  return waitForRollout(client, revisions, timeoutOf(flags.timeout ?? DEFAULT_TIMEOUT), io);
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
  if (flags.wait === true && flags['dry-run'] === true) throw new UsageError('--wait follows a write: a dry run writes nothing');
  if (flags.timeout !== undefined && flags.wait !== true) throw new UsageError('--timeout is how long --wait waits: add --wait');
  if (flags.timeout !== undefined) timeoutOf(flags.timeout);
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

/** The revisions a write spans, from its answer (a change's body, a PUT's or DELETE's headers): what `--wait` follows. */
function revisionsOf(answer: ApiAnswer): { readonly from: number; readonly revision: number } | undefined {
  const body = answer.body as Partial<ChangeAnswer> | undefined;
  const revision = Number(body?.revision ?? answer.headers[WRITE_HEADERS.revision]);
  const from = Number(body?.from ?? answer.headers[WRITE_HEADERS.from]);
  return Number.isSafeInteger(revision) && Number.isSafeInteger(from) ? { from, revision } : undefined;
}

function timeoutOf(text: string): number {
  try {
    return parsePositiveDuration(text);
  } catch (error) {
    throw new UsageError(`--timeout: ${(error as Error).message}`);
  }
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
