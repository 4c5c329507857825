import type { WriteAnswer } from '../../api/index.js';
import { describeKey } from '../../store/index.js';
import { CHANGE_HELP, CHANGE_OPTIONS, revisionsOf, runChange, waitIfAsked } from '../change-flags.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { printWarnings } from '../print-warnings.js';

const OPTIONS = { 'to-revision': { type: 'string' }, mesh: { type: 'string' }, ...CHANGE_OPTIONS, ...CLIENT_FLAGS } as const;

const REVISION = /^\d{1,15}$/;

export const revertCommand: Command = {
  name: 'revert',
  summary: 'put meshes, dataplanes and policies back as they were at a revision, as one new write',
  help: `Usage: chancery revert --to-revision REVISION [--mesh MESH] [--dry-run [-o json|diff]] [--fail-on-warnings] [--wait [--timeout 30s]]

Writes, as one new change (all or nothing, authored by you), every Mesh, Dataplane and policy as it was
at REVISION: each that differs written back, each created since deleted; nothing else is
written. With --mesh, only that mesh's. Keys, tokens and CAs are never reverted (a revoked key
would verify again), nor the statuses Chancery writes itself. Each write is conditional on the version read, so a write landing meanwhile
makes it a conflict (HTTP 409) instead of being overwritten. A revision older than the history
kept (--retention) is refused (HTTP 410). 'chancery history' and 'chancery diff' find one;
--dry-run shows what going back would do to every node first.

Options:
  --to-revision REVISION
      the store revision to go back to
  --mesh MESH
      only this mesh's resources
${CHANGE_HELP}
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 0);
    const revision = values['to-revision'];
    if (revision === undefined || !REVISION.test(revision)) throw new UsageError('--to-revision REVISION is required: a whole number');
    const client = clientFrom(values, io.env);
    const mesh = values.mesh === undefined ? '' : `?mesh=${encodeURIComponent(values.mesh)}`;
    const { code, written } = await runChange({ method: 'POST', path: `/revisions/${revision}/revert${mesh}` }, values, client, io);
    if (written === undefined) return code;
    const answer = written.body as WriteAnswer;
    if (answer.items.length === 0) io.stdout.write(`Nothing differs from revision ${revision}: nothing was written.\n`);
    for (const { type, mesh: itemMesh, name, outcome } of answer.items) io.stdout.write(`${describeKey({ type, mesh: itemMesh, name })} ${outcome}\n`);
    printWarnings(answer.warnings.map((warning) => warning.message), io.stderr);
    return waitIfAsked(values, revisionsOf(written, client.address), client, io, code);
  },
};
