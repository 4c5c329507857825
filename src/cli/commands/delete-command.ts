import { DEFAULT_MESH } from '../../mesh/index.js';
import { describeKey } from '../../store/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { CHANGE_HELP, CHANGE_OPTIONS, revisionsOf, runChange, waitIfAsked } from '../change-flags.js';
import { printWarnings } from '../print-warnings.js';
import { keyFor, resourcePath, resourceTypeOf } from '../resource-paths.js';

const OPTIONS = { mesh: { type: 'string' }, ...CHANGE_OPTIONS, ...CLIENT_FLAGS } as const;

export const deleteCommand: Command = {
  name: 'delete',
  summary: 'delete a mesh (with everything in it), a dataplane or a traffic policy',
  help: `Usage: chancery delete TYPE NAME [--mesh MESH] [--dry-run [-o json|diff]] [--fail-on-warnings] [--wait [--timeout 30s]]

TYPE is mesh, dataplane (dp) or a policy type (meshhttproute, meshtimeout, meshretry,
meshcircuitbreaker). Deleting a mesh deletes its dataplanes and policies with it; deleting
a policy gives the dataplanes it selected their defaults back, in one push. The delete's
warnings (a service losing its last endpoint while nodes call it, a connected node's Dataplane
deleted) go to stderr; --dry-run shows them, and what every node would lose, before anything
is deleted (docs/changing-safely.md).

Options:
  --mesh MESH
      the mesh of the dataplane or policy [default ${DEFAULT_MESH}]
${CHANGE_HELP}
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 2);
    const [word, name] = positionals;
    if (word === undefined || name === undefined) throw new UsageError('TYPE and NAME are required');
    const type = resourceTypeOf(word);
    if (type === 'Mesh' && values.mesh !== undefined) throw new UsageError('--mesh applies to dataplanes, not meshes');
    const key = keyFor(type, values.mesh ?? DEFAULT_MESH, name);
    const client = clientFrom(values, io.env);
    const { code, written } = await runChange({ method: 'DELETE', path: resourcePath(key) }, values, client, io);
    if (written === undefined) return code;
    io.stdout.write(`${describeKey(key)} deleted${type === 'Mesh' ? ', with its dataplanes' : ''}\n`);
    printWarnings(written.warnings, io.stderr);
    return waitIfAsked(values, revisionsOf(written, client.address), client, io, code);
  },
};
