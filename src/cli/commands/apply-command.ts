import { describeKey } from '../../store/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { ManifestError, UsageError } from '../errors.js';
import { readManifests } from '../read-manifests.js';
import { resourcePath } from '../resource-paths.js';
import { outcomeOf, printWarnings } from '../write-outcome.js';
import { applyAsChange } from '../apply-change.js';
import { asksForChange, CHANGE_HELP, CHANGE_OPTIONS } from '../change-flags.js';
import { EXIT, reportError } from '../report-error.js';

const OPTIONS = { filename: { type: 'string', short: 'f', multiple: true }, ...CHANGE_OPTIONS, ...CLIENT_FLAGS } as const;

export const applyCommand: Command = {
  name: 'apply',
  summary: 'create or replace resources from YAML or JSON files',
  help: `Usage: chancery apply -f FILE [-f FILE…] [--dry-run [-o json|diff]] [--fail-on-warnings] [--wait [--timeout 30s]] [--api-address HOST:PORT]

Creates or replaces every resource in the files: YAML documents separated by ---, a YAML
list, a JSON object or a JSON array; -f - reads stdin. Meshes are applied before
Dataplanes, otherwise in file order, one line per resource:

  Mesh payments created
  Dataplane payments/ledger-1 configured
  Dataplane payments/ledger-2 unchanged

A resource identical to what is stored is 'unchanged': nothing is written. A resource the server refuses stops the apply: its code, field and reason are printed,
the resources after it are listed as not applied, and the exit code is 1. A resource
carrying a version (as 'chancery get -o yaml' prints it) is only written over that version.
A write's warnings (a service losing its last endpoint while nodes call it, …) go to stderr.

With --dry-run, --fail-on-warnings or --wait the files are one change, written all or nothing
(docs/changing-safely.md).

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
    if (asksForChange(values)) return applyAsChange(entries, values, client, io);

    for (const [index, entry] of entries.entries()) {
      try {
        const answer = await client.request('PUT', resourcePath(entry.key), entry.resource);
        io.stdout.write(`${describeKey(entry.key)} ${outcomeOf(answer)}\n`);
        printWarnings(answer.warnings, io.stderr);
      } catch (error) {
        io.stderr.write(`${describeKey(entry.key)} (${entry.source}) was not applied:\n`);
        const code = reportError(error, io.stderr);
        const rest = entries.slice(index + 1);
        if (rest.length > 0) {
          io.stderr.write(`Not applied, as they come after it: ${rest.map((later) => describeKey(later.key)).join(', ')}\n`);
        }
        return code;
      }
    }
    return EXIT.ok;
  },
};
