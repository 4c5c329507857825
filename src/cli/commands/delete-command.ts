import { DEFAULT_MESH } from '../../mesh/index.js';
import { describeKey } from '../../store/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { EXIT } from '../report-error.js';
import { keyFor, resourcePath, resourceTypeOf } from '../resource-paths.js';

const OPTIONS = { mesh: { type: 'string' }, ...CLIENT_FLAGS } as const;

export const deleteCommand: Command = {
  name: 'delete',
  summary: 'delete a mesh (with everything in it), a dataplane or a traffic policy',
  help: `Usage: chancery delete TYPE NAME [--mesh MESH]

TYPE is mesh, dataplane (dp) or a policy type (meshhttproute, meshtimeout, meshretry,
meshcircuitbreaker). Deleting a mesh deletes its dataplanes and policies with it; deleting
a policy gives the dataplanes it selected their defaults back, in one push.

Options:
  --mesh MESH
      the mesh of the dataplane or policy [default ${DEFAULT_MESH}]
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
    await clientFrom(values, io.env).request('DELETE', resourcePath(key));
    io.stdout.write(`${describeKey(key)} deleted${type === 'Mesh' ? ', with its dataplanes' : ''}\n`);
    return EXIT.ok;
  },
};
