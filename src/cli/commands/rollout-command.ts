import type { RolloutAnswer } from '../../changes/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { formatDocument, outputFormatOf } from '../format-output.js';
import { EXIT } from '../report-error.js';
import { rolloutText } from '../rollout-output.js';
import { rolloutPath } from '../rollout-wait.js';

const OPTIONS = { since: { type: 'string' }, local: { type: 'boolean' }, output: { type: 'string', short: 'o' }, ...CLIENT_FLAGS } as const;

const REVISION = /^\d{1,15}$/;

export const rolloutCommand: Command = {
  name: 'rollout',
  summary: 'show how a write landed: the nodes it changed, ACKed, NACKed and pending',
  help: `Usage: chancery rollout status REVISION [--since REVISION] [--local] [-o table|json|yaml]

Shows the rollout of the write that made REVISION (every write answers its revision: apply and
delete print it with --wait), across every live instance sharing the store: the nodes whose
configuration it changed, how many hold it (or a later revision) and ACKed it, NACKed it (the
messages grouped), are still pending (with why: disconnected, awaiting-snapshot, behind,
unacked) or are connected nowhere (they get it when they connect). --since compares with an
earlier revision than the one the write followed.

  Revision 12 (since 11), written 2026-12-02T18:31:39.123Z by cp-1 (127.0.0.1): Dataplane default/echo-3 upserted
  AFFECTED   ACKED   NACKED   PENDING   NOT CONNECTED
  1          1       0        0         0
  Complete: the last ACK at 2026-12-02T18:31:39.180Z

The exit code is 0 once complete, 1 otherwise.

Options:
  --since REVISION
      the revision to compare with [default the one the write followed]
  --local
      only this instance's sessions, not the fleet's
  -o, --output FORMAT
      table, json or yaml [default table]
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 2);
    const [verb, revision] = positionals;
    if (verb !== 'status') throw new UsageError(verb === undefined ? 'rollout needs a verb: status' : `unknown verb "${verb}": use status`);
    if (revision === undefined || !REVISION.test(revision)) throw new UsageError('status needs a REVISION: a whole number');
    if (values.since !== undefined && !REVISION.test(values.since)) throw new UsageError(`--since must be a revision (a whole number); got "${values.since}"`);
    const format = outputFormatOf(values.output);
    const path = values.local === true ? `/revisions/${revision}${values.since === undefined ? '' : `?since=${values.since}`}` : rolloutPath(Number(revision), values.since === undefined ? undefined : Number(values.since));
    const answer = (await clientFrom(values, io.env).request('GET', path)).body as RolloutAnswer;
    io.stdout.write(format === 'table' ? rolloutText(answer) : formatDocument(answer, format));
    return answer.complete ? EXIT.ok : EXIT.failed;
  },
};
