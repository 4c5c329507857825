import { isDnsLabel } from '../../mesh/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { formatTable } from '../format-table.js';
import { EXIT } from '../report-error.js';

const OPTIONS = { mesh: { type: 'string' }, ...CLIENT_FLAGS } as const;

interface ShownKey {
  readonly kid: string;
  readonly createdAt: string;
  readonly signing: boolean;
}

export const keyCommand: Command = {
  name: 'key',
  summary: "rotate, list or remove a mesh's token signing keys",
  help: `Usage: chancery key rotate|list --mesh MESH
       chancery key remove --mesh MESH KID

A mesh's dataplane tokens are signed by its newest signing key and verified by any of its keys.
Keys live in the store, so every instance sees a rotation or a removal at once.

  rotate   add a new key: it signs every token issued from now on; older tokens still verify
  list     the keys, newest first, and which one signs
  remove   delete key KID: every token it signed is revoked, and streams opened with one end
           with UNAUTHENTICATED at once

Rotate, let dataplanes pick up tokens signed by the new key, then remove the old one.
Only an admin may manage keys.

Options:
  --mesh MESH
      the mesh (required)
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    const [action, kid] = positionals;
    const { mesh } = values;
    if (mesh === undefined || !isDnsLabel(mesh)) throw new UsageError('--mesh MESH is required, a DNS label');
    const client = clientFrom(values, io.env);
    const keys = `/meshes/${encodeURIComponent(mesh)}/signing-keys`;
    switch (action) {
      case 'rotate': {
        atMost(positionals, 1);
        const { body } = await client.request('POST', keys, {});
        io.stdout.write(`key ${(body as ShownKey).kid} now signs mesh ${mesh}'s tokens; older keys still verify until removed\n`);
        return EXIT.ok;
      }
      case 'list': {
        atMost(positionals, 1);
        const { items } = (await client.request('GET', keys)).body as { items: ShownKey[] };
        const rows = [...items].sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1)).map((key) => [key.kid, key.createdAt, key.signing ? 'yes' : '']);
        io.stdout.write(formatTable(['KID', 'CREATED', 'SIGNS'], rows));
        return EXIT.ok;
      }
      case 'remove': {
        atMost(positionals, 2);
        if (kid === undefined) throw new UsageError('say which key: chancery key remove --mesh MESH KID');
        await client.request('DELETE', `${keys}/${encodeURIComponent(kid)}`);
        io.stdout.write(`key ${kid} removed from mesh ${mesh}: the tokens it signed are revoked\n`);
        return EXIT.ok;
      }
      default:
        throw new UsageError(action === undefined ? 'say what to do: rotate, list or remove' : `unknown key command "${action}": rotate, list or remove`);
    }
  },
};
