import type { DiffAnswer } from '../../api/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { formatDocument, outputFormatOf } from '../format-output.js';
import { unifiedDiff } from '../line-diff.js';
import { EXIT } from '../report-error.js';

const OPTIONS = { from: { type: 'string' }, to: { type: 'string' }, mesh: { type: 'string' }, output: { type: 'string', short: 'o' }, ...CLIENT_FLAGS } as const;

const REVISION = /^\d{1,15}$/;

export const diffCommand: Command = {
  name: 'diff',
  summary: 'show how meshes, dataplanes and policies changed between two revisions',
  help: `Usage: chancery diff --from REVISION [--to REVISION] [--mesh MESH] [-o table|json|yaml]

Prints each Mesh, Dataplane and policy that differs between the two store revisions (--to: the latest
by default), as a unified diff of its JSON: created, changed or deleted. 'chancery revert
--to-revision REVISION' writes the store back as it was at one.

  --- Dataplane default/echo-1 @ 12
  +++ Dataplane default/echo-1 @ 15
  @@ -7,3 +7,3 @@
  -        "port": 10001,
  +        "port": 10011,

Options:
  --from REVISION
      the revision to compare from
  --to REVISION
      the revision to compare to [default the latest]
  --mesh MESH
      only this mesh's resources
  -o, --output FORMAT
      table (the diff), json or yaml [default table]
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 0);
    for (const flag of ['from', 'to'] as const) {
      const value = values[flag];
      if (value !== undefined && !REVISION.test(value)) throw new UsageError(`--${flag} must be a revision (a whole number); got "${value}"`);
    }
    if (values.from === undefined) throw new UsageError('--from REVISION is required');
    const format = outputFormatOf(values.output);
    const query = new URLSearchParams({ from: values.from, ...(values.to !== undefined && { to: values.to }), ...(values.mesh !== undefined && { mesh: values.mesh }) });
    const answer = (await clientFrom(values, io.env).request('GET', `/diff?${query}`)).body as DiffAnswer;
    if (format !== 'table') io.stdout.write(formatDocument(answer, format));
    else if (answer.items.length === 0) io.stdout.write(`Nothing differs between revisions ${answer.from} and ${answer.to}.\n`);
    else io.stdout.write(diffText(answer));
    return EXIT.ok;
  },
};

function diffText({ from, to, items }: DiffAnswer): string {
  let out = '';
  for (const { type, mesh, name, change, before, after } of items) {
    const what = `${type} ${type === 'Mesh' ? name : `${mesh}/${name}`}`;
    const json = (resource: unknown) => (resource === undefined ? '' : `${JSON.stringify(resource, null, 2)}\n`);
    out += `--- ${what} @ ${from}${change === 'created' ? ' (absent)' : ''}\n`;
    out += `+++ ${what} @ ${to}${change === 'deleted' ? ' (deleted)' : ''}\n`;
    out += unifiedDiff(json(before), json(after));
  }
  return out;
}
