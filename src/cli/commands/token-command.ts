import { isDnsLabel } from '../../mesh/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { EXIT } from '../report-error.js';
import { writeOutput } from '../write-output.js';

const OPTIONS = { mesh: { type: 'string' }, name: { type: 'string' }, ttl: { type: 'string' }, output: { type: 'string' }, ...CLIENT_FLAGS } as const;

export const tokenCommand: Command = {
  name: 'token',
  summary: 'issue a dataplane token: what proves a dataplane is who its node id says',
  help: `Usage: chancery token issue --mesh MESH --name NAME [--ttl 24h] [--output FILE]

Prints a token binding an xDS stream to Dataplane NAME of MESH (node id MESH.NAME): an RS256
JWT signed with the mesh's newest signing key (its first is made now if it has none). A mesh
with dataplaneAuth: token serves a stream only with such a token in its authorization
metadata, as 'chancery bootstrap envoy --token-file FILE' puts it. The Dataplane must exist:
apply it first. Removing the key that signed it (chancery key remove) revokes it.
POST /meshes/MESH/dataplanes/NAME/token does the same.

Options:
  --mesh MESH
  --name NAME
      the dataplane the token speaks for (both required)
  --ttl DURATION
      how long it is valid, such as 24h, 90m or 30d; the stream it opens ends then [default 24h]
  --output FILE
      write the token to FILE (readable by its owner only) instead of stdout
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 1);
    if (positionals[0] !== 'issue') throw new UsageError(positionals[0] === undefined ? 'say what to do: chancery token issue' : `unknown token command "${positionals[0]}": issue`);
    const { mesh, name } = values;
    if (mesh === undefined || name === undefined) throw new UsageError('--mesh MESH and --name NAME are required: the dataplane the token speaks for');
    for (const [flag, value] of [['mesh', mesh], ['name', name]] as const) if (!isDnsLabel(value)) throw new UsageError(`--${flag} must be a DNS label; got "${value}"`);
    const path = `/meshes/${encodeURIComponent(mesh)}/dataplanes/${encodeURIComponent(name)}/token`;
    const { body } = await clientFrom(values, io.env).request('POST', path, values.ttl === undefined ? {} : { ttl: values.ttl });
    const issued = body as { token: string; node: string; expiresAt: string };
    await writeOutput(io, `${issued.token}\n`, values.output, { secret: true });
    io.stderr.write(`token for node ${issued.node}, valid until ${issued.expiresAt}${values.output === undefined ? '' : `, written to ${values.output}`}\n`);
    return EXIT.ok;
  },
};
