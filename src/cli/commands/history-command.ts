import type { EventJson, HistoryPage } from '../../api/index.js';
import { DEFAULT_MESH } from '../../mesh/index.js';
import { describeKey } from '../../store/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { formatDocument, outputFormatOf } from '../format-output.js';
import { formatTable } from '../format-table.js';
import { EXIT } from '../report-error.js';
import { keyFor, resourcePath, resourceTypeOf } from '../resource-paths.js';

const OPTIONS = { mesh: { type: 'string' }, output: { type: 'string', short: 'o' }, ...CLIENT_FLAGS } as const;

/** Events per request: the most the API answers in one page. */
const PAGE = 1_000;

export const historyCommand: Command = {
  name: 'history',
  summary: 'show what happened to a mesh, a dataplane or a policy: each write, when, and by whom',
  help: `Usage: chancery history TYPE NAME [--mesh MESH] [-o table|json|yaml]

TYPE is mesh, dataplane (dp) or a policy type (meshtimeout, …). Prints the resource's
events, oldest first, one line each: the store revision it made (SEQ), when, its kind
(upserted or deleted), the resource's version after it, and who wrote it: the instance, and
in parentheses the API caller.

  SEQ   TIME                       KIND       VERSION   AUTHOR
  2     2026-12-02T18:31:39.123Z   upserted   1         cp-1 (127.0.0.1)

-o json and -o yaml print the events in full, with the resource each upsert wrote.
'chancery get TYPE NAME --revision SEQ' shows the resource as it was at one of them. When
'chancery run --retention' has folded older events into a checkpoint, a note on stderr says
where the retained history starts.

Options:
  --mesh MESH
      the mesh of the dataplane or policy [default ${DEFAULT_MESH}]
  -o, --output FORMAT
      table, json or yaml [default table]
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 2);
    const [word, name] = positionals;
    if (word === undefined || name === undefined) throw new UsageError('TYPE and NAME are required');
    const type = resourceTypeOf(word);
    if (type === 'Mesh' && values.mesh !== undefined) throw new UsageError('--mesh applies to dataplanes, not meshes');
    const format = outputFormatOf(values.output);
    const key = keyFor(type, values.mesh ?? DEFAULT_MESH, name);
    const client = clientFrom(values, io.env);

    // The server's contract (src/api/history-routes.ts): pages of `{ items, next, compactedThrough? }`.
    const events: EventJson[] = [];
    let compactedThrough: number | undefined;
    for (let after = 0; ; ) {
      const page = (await client.request('GET', `${resourcePath(key)}/history?after=${after}&limit=${PAGE}`)).body as HistoryPage;
      events.push(...page.items);
      compactedThrough = page.compactedThrough;
      if (page.items.length < PAGE) break;
      after = page.next;
    }

    if (format !== 'table') io.stdout.write(formatDocument(events, format));
    else if (events.length === 0) io.stderr.write(`No events of ${describeKey(key)} are retained.\n`);
    else io.stdout.write(historyTable(events));
    if (compactedThrough !== undefined) {
      io.stderr.write(`Events up to revision ${compactedThrough} were compacted (retention): the history kept starts after it.\n`);
    }
    return EXIT.ok;
  },
};

function historyTable(events: readonly EventJson[]): string {
  return formatTable(
    ['SEQ', 'TIME', 'KIND', 'VERSION', 'AUTHOR'],
    events.map((event) => [
      String(event.seq),
      event.at,
      event.kind,
      String(event.version),
      event.by.caller === undefined ? event.by.instance : `${event.by.instance} (${event.by.caller})`,
    ]),
  );
}
