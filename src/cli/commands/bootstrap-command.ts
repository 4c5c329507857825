import { HOST_PORT_RULE, parseHostPort } from '../../host-port.js';
import { parseNodeId } from '../../mesh/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { EXIT } from '../report-error.js';
import { resourcePath } from '../resource-paths.js';
import { writeOutput } from '../write-output.js';

const OPTIONS = {
  node: { type: 'string' },
  xds: { type: 'string' },
  'admin-port': { type: 'string' },
  delta: { type: 'boolean' },
  output: { type: 'string' },
  ...CLIENT_FLAGS,
} as const;

const KINDS = ['envoy', 'grpc'] as const;

export const bootstrapCommand: Command = {
  name: 'bootstrap',
  summary: 'print the bootstrap a dataplane starts from: Envoy YAML or gRPC JSON',
  help: `Usage: chancery bootstrap envoy|grpc --node MESH.NAME [--xds HOST:PORT] [--admin-port N] [--delta] [--output FILE]

Prints what a dataplane needs to connect to Chancery, for the Dataplane its node id names
(it must exist). The same as GET /meshes/MESH/dataplanes/NAME/bootstrap?format=envoy|grpc.

  envoy   an Envoy bootstrap (YAML): node id and cluster, ADS over gRPC with retry back-off
          and keepalive, the node on the first request only, an admin listener on 127.0.0.1;
          run it with 'envoy -c FILE'
  grpc    the JSON a proxyless gRPC client reads from GRPC_XDS_BOOTSTRAP (SotW only)

Options:
  --node MESH.NAME
      the dataplane's node id (required)
  --xds HOST:PORT
      where the dataplane dials Chancery, or the balancer in front of it
      [default: the instance's own xDS address, 127.0.0.1:5678 for 'npm start']
  --admin-port N
      Envoy's admin port on 127.0.0.1; 0 lets the OS choose (see envoy --admin-address-path) [default 9901]
  --delta
      Envoy speaks Delta xDS (api_type DELTA_GRPC) instead of State of the World
  --output FILE
      write to FILE instead of stdout
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 1);
    const [kind] = positionals;
    const format = KINDS.find((candidate) => candidate === kind);
    if (format === undefined) throw new UsageError(kind === undefined ? 'say which bootstrap: envoy or grpc' : `unknown bootstrap "${kind}": envoy or grpc`);
    if (values.node === undefined) throw new UsageError('--node MESH.NAME is required: the node id of the dataplane');
    const node = parseNodeId(values.node);
    if (!node.ok) throw new UsageError(`--node: ${node.reason}`);
    if (format === 'grpc') {
      for (const flag of ['admin-port', 'delta'] as const) {
        if (values[flag] !== undefined) throw new UsageError(`--${flag} applies to envoy: a proxyless gRPC client has no admin listener and speaks SotW only`);
      }
    }
    const query = new URLSearchParams({ format });
    if (values.xds !== undefined) {
      if (parseHostPort(values.xds) === undefined) throw new UsageError(`--xds must be ${HOST_PORT_RULE}; got "${values.xds}"`);
      query.set('xds', values.xds);
    }
    const adminPort = values['admin-port'];
    if (adminPort !== undefined) {
      if (!/^\d{1,5}$/.test(adminPort) || Number(adminPort) > 65_535) throw new UsageError(`--admin-port must be a port from 0 to 65535; got "${adminPort}"`);
      query.set('adminPort', adminPort);
    }
    if (values.delta) query.set('delta', 'true');
    const path = `${resourcePath({ type: 'Dataplane', mesh: node.mesh, name: node.name })}/bootstrap?${query}`;
    await writeOutput(io, await clientFrom(values, io.env).text(path), values.output);
    return EXIT.ok;
  },
};
