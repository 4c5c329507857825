import { WRITE_HEADERS } from '../api/index.js';
import { NODES_PAGE, type PreviewAnswer } from '../changes/index.js';
import type { ApiAnswer, ApiClient } from './api-client.js';
import type { CliIo, TextSink } from './cli-io.js';
import { ApiRejectedError, PreviewMovedError, UnexpectedResponseError, UsageError } from './errors.js';
import { formatDocument } from './format-output.js';
import { previewDiff, previewText } from './preview-output.js';
import { parsePositiveDuration } from './option-parsers.js';
import { EXIT } from './report-error.js';
import { waitForRollout } from './rollout-wait.js';
import { printWarnings } from './print-warnings.js';

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

/** The revisions a write spans: what `--wait` and `chancery rollout status` follow. */
export interface WrittenRevisions {
  readonly from: number;
  readonly revision: number;
}

/** Refuses flags that do not go together (exit 2), before anything is sent. */
export function checkChangeFlags(flags: ChangeFlags): void {
  const output = flags.output;
  if (output !== undefined && output !== 'json' && output !== 'diff') throw new UsageError(`-o must be json or diff; got "${output}"`);
  if (output !== undefined && flags['dry-run'] !== true) throw new UsageError('-o json|diff shows a dry run: add --dry-run');
  if (flags.wait === true && flags['dry-run'] === true) throw new UsageError('--wait follows a write: a dry run writes nothing');
  if (flags.timeout !== undefined && flags.wait !== true) throw new UsageError('--timeout is how long --wait waits: add --wait');
  if (flags.timeout !== undefined) timeoutOf(flags.timeout);
}

/**
 * After a write was made: with `--wait`, follows its rollout across the fleet and resolves with
 * the exit code (`waitForRollout`); without it, with `code`.
 */
export async function waitIfAsked(flags: ChangeFlags, written: WrittenRevisions, client: ApiClient, io: CliIo, code: number): Promise<number> {
  if (flags.wait !== true) return code;
  return waitForRollout(client, written, timeoutOf(flags.timeout ?? DEFAULT_TIMEOUT), io);
}

/**
 * A dry run's answer printed as asked: text, `-o json` or `-o diff`, its warnings on stderr.
 * Resolves with the exit code: 1 when `--fail-on-warnings` would refuse it.
 */
export function printPreview(answer: PreviewAnswer, flags: ChangeFlags, io: CliIo): number {
  if (flags.output === 'json') io.stdout.write(formatDocument(answer, 'json'));
  else if (flags.output === 'diff') io.stdout.write(previewDiff(answer));
  else io.stdout.write(previewText(answer));
  printWarnings(answer.warnings.map((warning) => warning.message), io.stderr);
  return flags['fail-on-warnings'] === true && answer.warnings.length > 0 ? EXIT.failed : EXIT.ok;
}

/** When `error` is a write refused for its warnings (`--fail-on-warnings`): prints them and says so. */
export function refusedForWarnings(error: unknown, stderr: TextSink): boolean {
  if (!(error instanceof ApiRejectedError) || error.rejection.warnings === undefined) return false;
  printWarnings(error.rejection.warnings.map((warning) => warning.message), stderr);
  stderr.write('Refused (--fail-on-warnings): nothing was written.\n');
  return true;
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
  checkChangeFlags(flags);
  if (flags['dry-run'] === true) return { code: printPreview(await readPreview(client, request, flags), flags, io) };
  const checked = flags['fail-on-warnings'] === true ? `${request.path.includes('?') ? '&' : '?'}failOnWarnings=true` : '';
  try {
    const written = await client.request(request.method, `${request.path}${checked}`, request.body);
    return { code: EXIT.ok, written };
  } catch (error) {
    if (!refusedForWarnings(error, io.stderr)) throw error;
    return { code: EXIT.failed };
  }
}

/** The revisions a write spans, from its answer: its body's (`from`, `revision`), or a PUT's or DELETE's headers. */
export function revisionsOf(answer: ApiAnswer, address: string): WrittenRevisions {
  const body = answer.body as Partial<WrittenRevisions> | undefined;
  const revision = Number(body?.revision ?? answer.headers[WRITE_HEADERS.revision]);
  const from = Number(body?.from ?? answer.headers[WRITE_HEADERS.from]);
  // A server older than the revision headers: nothing to follow.
  if (!Number.isSafeInteger(revision) || !Number.isSafeInteger(from)) throw new UnexpectedResponseError(address, answer.status, 'a write answered without its revisions');
  return { from, revision };
}

function timeoutOf(text: string): number {
  try {
    return parsePositiveDuration(text);
  } catch (error) {
    throw new UsageError(`--timeout: ${(error as Error).message}`);
  }
}

/** A dry run of `request`: its first page of nodes for text, every page merged into one for `-o json` and `-o diff`. */
export async function readPreview(client: ApiClient, request: ChangeRequest, flags: ChangeFlags): Promise<PreviewAnswer> {
  const separator = request.path.includes('?') ? '&' : '?';
  const page = async (offset: number) =>
    (await client.request(request.method, `${request.path}${separator}dryRun=true&offset=${offset}&limit=${NODES_PAGE.max}`, request.body)).body as PreviewAnswer;
  const first = await page(0);
  if (flags.output === undefined) return first;
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
