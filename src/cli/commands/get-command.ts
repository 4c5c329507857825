import { DEFAULT_MESH, type Dataplane, type Mesh, type Resource, type ResourceType } from '../../mesh/index.js';
import { isPolicyType, type Policy } from '../../policies/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { formatDocument, formatDocuments, outputFormatOf } from '../format-output.js';
import { formatTable } from '../format-table.js';
import { EXIT } from '../report-error.js';
import { policyTable } from '../policy-table.js';
import { collectionPath, keyFor, resourcePath, resourceTypeOf, TYPE_WORDS_HELP } from '../resource-paths.js';

const OPTIONS = { mesh: { type: 'string' }, output: { type: 'string', short: 'o' }, revision: { type: 'string' }, ...CLIENT_FLAGS } as const;

/** A resource as the API answers it. */
type Served = Resource & { readonly version: number };

export const getCommand: Command = {
  name: 'get',
  summary: 'show meshes, dataplanes or traffic policies',
  help: `Usage: chancery get TYPE [NAME] [--mesh MESH] [--revision SEQ] [-o table|json|yaml]

TYPE is mesh (meshes), dataplane (dataplanes, dp) or a policy type (meshhttproutes,
meshtimeouts, meshretries, meshcircuitbreakers). Without NAME, lists them all: every mesh,
or the dataplanes (or policies) of one mesh. -o yaml and -o json print what 'chancery apply -f'
reads, version included, so an edited copy is only applied over the version it was read at.
With --revision, shows one resource as it was at that store revision ('chancery history'
lists the revisions that changed it).

Options:
  --mesh MESH
      the mesh of the dataplanes or policies [default ${DEFAULT_MESH}]
  --revision SEQ
      the store revision to read NAME at [default: the latest]
  -o, --output FORMAT
      table, json or yaml [default table]
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 2);
    const [word, name] = positionals;
    if (word === undefined) throw new UsageError(`TYPE is required: ${TYPE_WORDS_HELP}`);
    const type = resourceTypeOf(word);
    if (type === 'Mesh' && values.mesh !== undefined) throw new UsageError('--mesh applies to dataplanes, not meshes');
    const format = outputFormatOf(values.output);
    const mesh = values.mesh ?? DEFAULT_MESH;
    const { revision } = values;
    if (revision !== undefined && name === undefined) throw new UsageError('--revision reads one resource: give its NAME');
    if (revision !== undefined && !/^\d{1,15}$/.test(revision)) throw new UsageError(`--revision must be a store revision (a whole number); got "${revision}"`);
    const client = clientFrom(values, io.env);

    // The server's contract (src/api): a resource is `{ ...resource, version }`, a list `{ items }`.
    const at = revision === undefined ? '' : `?revision=${revision}`;
    const items =
      name === undefined
        ? ((await client.request('GET', collectionPath(type, mesh))).body as { items: Served[] }).items
        : [(await client.request('GET', `${resourcePath(keyFor(type, mesh, name))}${at}`)).body as Served];

    if (format !== 'table') io.stdout.write(name === undefined ? formatDocuments(items, format) : formatDocument(items[0], format));
    else if (items.length === 0) io.stderr.write(type === 'Mesh' ? 'No meshes found.\n' : `No ${collectionPath(type, mesh).split('/').at(-1)} found in mesh ${mesh}.\n`);
    else io.stdout.write(tableOf(type, items));
    return EXIT.ok;
  },
};

function tableOf(type: ResourceType, items: readonly Served[]): string {
  if (isPolicyType(type)) return policyTable(items as readonly (Policy & Served)[]);
  if (type === 'Mesh') {
    return formatTable(['NAME', 'DATAPLANE-AUTH', 'VERSION'], (items as readonly (Mesh & Served)[]).map((mesh) => [mesh.name, mesh.dataplaneAuth, String(mesh.version)]));
  }
  return formatTable(
    ['MESH', 'NAME', 'ADDRESS', 'INBOUND', 'OUTBOUND', 'VERSION'],
    (items as readonly (Dataplane & Served)[]).map((dataplane) => [
      dataplane.mesh,
      dataplane.name,
      dataplane.networking.address,
      dataplane.networking.inbound.map((inbound) => `${inbound.tags.service}:${inbound.port}`).join(',') || '-',
      dataplane.networking.outbound.map((outbound) => `${outbound.service}:${outbound.port}`).join(',') || '-',
      String(dataplane.version),
    ]),
  );
}
