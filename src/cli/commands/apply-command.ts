import type { ApplyAnswer } from '../../api/index.js';
import { APPLY_LIMITS } from '../../common/index.js';
import { describeKey } from '../../store/index.js';
import { previewApply } from '../apply-change.js';
import { ApplyProgress } from '../apply-progress.js';
import { ApplyTally } from '../apply-tally.js';
import { CHANGE_HELP, CHANGE_OPTIONS, checkChangeFlags, refusedForWarnings, waitIfAsked } from '../change-flags.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import type { TextSink } from '../cli-io.js';
import { ApiRejectedError, ManifestError, UsageError } from '../errors.js';
import { isPolicyType } from '../../policies/index.js';
import { warnIfUnmatched } from '../policy-warnings.js';
import { type ManifestEntry, readManifests } from '../read-manifests.js';
import { EXIT, reportError } from '../report-error.js';
import { printWarnings } from '../print-warnings.js';

const OPTIONS = { filename: { type: 'string', short: 'f', multiple: true }, ...CHANGE_OPTIONS, ...CLIENT_FLAGS } as const;

export const applyCommand: Command = {
  name: 'apply',
  summary: 'create or replace resources from YAML or JSON files',
  help: `Usage: chancery apply -f FILE [-f FILE…] [--dry-run [-o json|diff]] [--fail-on-warnings] [--wait [--timeout 30s]] [--api-address HOST:PORT]

Creates or replaces every resource in the files: YAML documents separated by ---, a YAML
list, a JSON object or a JSON array; -f - reads stdin. Meshes are applied before the
rest, otherwise in file order, in one request (POST /apply): all of them at one revision,
or none. One line per resource, then the count:

  Mesh payments created
  Dataplane payments/ledger-1 configured
  Dataplane payments/ledger-2 unchanged
  3 resources: 1 created, 1 configured, 1 unchanged, 0 refused

If the server refuses any resource, nothing is applied: each refused one is printed with its
file, code, field and reason, and the exit code is 1. A file of more than ${APPLY_LIMITS.items}
resources is sent in batches of that many, each all or nothing, stopping at a refused one.
On a terminal, a large file shows its progress. A resource carrying a version (as 'chancery
get -o yaml' prints it) is only written over that version. A resource identical to what is
stored is 'unchanged': nothing is written for it.

A write's warnings (a service losing its last endpoint while nodes call it, a connected node's
Dataplane deleted) go to stderr. --dry-run shows what the file would do to every node before
anything is written, --fail-on-warnings refuses a write with warnings, --wait follows the write
until every node it changed ACKed it (docs/changing-safely.md).

A traffic policy (MeshHTTPRoute, MeshTimeout, MeshRetry, MeshCircuitBreaker) whose targetRef
selects no dataplane of its mesh is applied with a warning on stderr.

Options:
  -f, --filename FILE
      a file to apply, or - for stdin (repeatable)
${CHANGE_HELP}
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 0);
    const files = values.filename ?? [];
    if (files.length === 0) throw new UsageError('-f FILE is required (-f - reads stdin)');
    const client = clientFrom(values, io.env);
    const entries = await readManifests(files, io.stdin);
    if (entries.length === 0) throw new ManifestError(files.join(', '), undefined, 'holds no resources');
    checkChangeFlags(values);
    if (values['dry-run'] === true) return previewApply(batchesOf(entries).map((batch) => ({ items: batch.map(bodyOf) })), values, client, io);

    const checked = values['fail-on-warnings'] === true ? '?failOnWarnings=true' : '';
    let written: { from: number; revision: number } | undefined;
    const tally = new ApplyTally();
    const progress = new ApplyProgress(io.stderr, entries.length);
    const batches = batchesOf(entries);
    for (const [index, batch] of batches.entries()) {
      let answer: ApplyAnswer;
      try {
        answer = (await client.request('POST', `/apply${checked}`, { items: batch.map(bodyOf) })).body as ApplyAnswer;
      } catch (error) {
        progress.clear();
        if (!refusedForWarnings(error, io.stderr)) reportRefusal(error, batch, io.stderr, tally);
        else tally.add('not applied', batch.length);
        const later = batches.slice(index + 1).reduce((sum, rest) => sum + rest.length, 0);
        tally.add('not applied', later);
        if (index > 0) io.stderr.write(`The ${index} batches of ${APPLY_LIMITS.items} resources before it were applied; nothing after it was sent.\n`);
        io.stdout.write(tally.line());
        return EXIT.failed;
      }
      progress.answered(batch.length);
      written = { from: written?.from ?? answer.from, revision: answer.revision };
      for (const [position, applied] of answer.items.entries()) {
        const entry = batch[position]!;
        io.stdout.write(`${describeKey(entry.key)} ${applied.outcome}\n`);
        tally.add(applied.outcome);
        if (isPolicyType(entry.key.type)) await warnIfUnmatched(client, entry, io);
      }
      printWarnings(answer.warnings.map((warning) => warning.message), io.stderr);
    }
    progress.clear();
    io.stdout.write(tally.line());
    return waitIfAsked(values, written!, client, io, EXIT.ok);
  },
};

/**
 * The resources in batches `POST /apply` takes whole: a file within APPLY_LIMITS is one batch,
 * applied all or nothing; a larger one is applied batch after batch, stopping at a refused one.
 */
function batchesOf(entries: readonly ManifestEntry[]): ManifestEntry[][] {
  const batches: ManifestEntry[][] = [];
  let batch: ManifestEntry[] = [];
  let bytes = 0;
  for (const entry of entries) {
    // Over-estimated: the body's JSON, with room for its brackets and commas.
    const size = JSON.stringify(entry.resource).length + 64;
    if (batch.length === APPLY_LIMITS.items || (batch.length > 0 && bytes + size > APPLY_LIMITS.bodyBytes / 2)) {
      batches.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(entry);
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/** A resource as sent: as written, with the mesh it was read into (a Dataplane without one goes to `default`, as kubectl's namespace). */
function bodyOf(entry: ManifestEntry): Readonly<Record<string, unknown>> {
  return entry.key.type === 'Dataplane' ? { ...entry.resource, mesh: entry.key.mesh } : entry.resource;
}

/** Prints why a batch was not applied: each refused resource with its file and reason, or the error that stopped the whole batch. */
function reportRefusal(error: unknown, batch: readonly ManifestEntry[], stderr: TextSink, tally: ApplyTally): void {
  const refused = error instanceof ApiRejectedError ? (error.rejection.items ?? []) : [];
  if (refused.length === 0) {
    stderr.write(`${batch.length === 1 ? describeKey(batch[0]!.key) : `${batch.length} resources`} not applied:\n`);
    reportError(error, stderr);
    tally.add('not applied', batch.length);
    return;
  }
  for (const document of refused) {
    const entry = batch[document.index];
    const field = document.field === undefined ? '' : `\n  field: ${document.field.replace(/^items\[\d+\]\.?/, '')}`;
    stderr.write(`${entry === undefined ? `items[${document.index}]` : `${describeKey(entry.key)} (${entry.source})`} refused: ${document.code} (HTTP ${document.status}): ${document.reason}${field}\n`);
  }
  tally.add('refused', refused.length);
  tally.add('not applied', batch.length - refused.length);
  stderr.write(`Nothing of ${batch.length === 1 ? 'it' : `these ${batch.length} resources`} was applied: an apply is all or nothing.\n`);
}
