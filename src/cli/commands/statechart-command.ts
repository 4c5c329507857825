import { isStatechartFormat, renderStatechart, STATECHART_FORMATS } from '../../machines/index.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { EXIT } from '../report-error.js';
import { writeOutput } from '../write-output.js';

const OPTIONS = { format: { type: 'string' }, output: { type: 'string' } } as const;

export const statechartCommand: Command = {
  name: 'statechart',
  summary: "print the session state chart, generated from the machine's definition",
  help: `Usage: chancery statechart [--format ${STATECHART_FORMATS.join('|')}] [--output FILE]

Prints the chart every dataplane session follows, walked from the session machine itself:
its states, each transition with its event and guard, the eviction delay (at the default
of 'chancery run --eviction-grace'), and the final state. A transition that stays in its
state is listed inside it. Needs no running server.

  mermaid   a Mermaid stateDiagram-v2 (paste it into a Markdown file or mermaid.live)
  dot       Graphviz DOT; each state's node id is its name
  svg       the DOT laid out by Graphviz, in process
  json      the chart as data: states, transitions with triggers, guards and targets

Options:
  --format FORMAT
      ${STATECHART_FORMATS.join(', ')} [default mermaid]
  --output FILE
      write to FILE instead of stdout
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 0);
    const format = values.format ?? 'mermaid';
    if (!isStatechartFormat(format)) throw new UsageError(`--format must be one of ${STATECHART_FORMATS.join(', ')}; got "${format}"`);
    await writeOutput(io, await renderStatechart(format), values.output);
    return EXIT.ok;
  },
};
