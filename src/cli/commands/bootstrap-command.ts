import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { HOST_PORT_RULE, parseHostPort } from '../../common/index.js';
import { parseNodeId } from '../../mesh/index.js';
import type { ApiClient } from '../api-client.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { ApiRejectedError, UsageError } from '../errors.js';
import { EXIT } from '../report-error.js';
import { resourcePath } from '../resource-paths.js';
import { writeOutput } from '../write-output.js';

const OPTIONS = {
  node: { type: 'string' },
  xds: { type: 'string' },
  'admin-port': { type: 'string' },
  delta: { type: 'boolean' },
  output: { type: 'string' },
  'token-file': { type: 'string' },
  'xds-ca-file': { type: 'string' },
  'credentials-out': { type: 'string' },
  certificates: { type: 'string' },
  force: { type: 'boolean' },
  ...CLIENT_FLAGS,
} as const;

/** The header the API takes an Envoy's dataplane token in (bootstrap-routes.ts). */
const TOKEN_HEADER = 'x-chancery-dataplane-token';

const KINDS = ['envoy', 'grpc'] as const;

export const bootstrapCommand: Command = {
  name: 'bootstrap',
  summary: 'print the bootstrap a dataplane starts from: Envoy YAML or gRPC JSON',
  help: `Usage: chancery bootstrap envoy --node MESH.NAME [--xds HOST:PORT] [--admin-port N] [--delta]
                                  [--token-file FILE] [--xds-ca-file PATH] [--output FILE]
       chancery bootstrap grpc --node MESH.NAME [--xds HOST:PORT] [--credentials-out DIR [--xds-ca-file PATH] [--force]]
                               [--certificates DIR] [--output FILE]

Prints what a dataplane needs to connect to Chancery, for the Dataplane its node id names
(it must exist). The same as GET /meshes/MESH/dataplanes/NAME/bootstrap?format=envoy|grpc.

  envoy   an Envoy bootstrap (YAML): node id and cluster, ADS over gRPC with retry back-off
          and keepalive, the node on the first request only, an admin listener on 127.0.0.1;
          the token of --token-file in the ADS stream's initial metadata, TLS to Chancery with
          --xds-ca-file; run it with 'envoy -c FILE'
  grpc    the JSON a proxyless gRPC client reads from GRPC_XDS_BOOTSTRAP (SotW only). With
          --credentials-out DIR: a service account for the node (its public key registered in
          the store), DIR/service-account.json, DIR/bootstrap.json with google_default
          credentials (TLS, and a JWT the client signs on every stream), and DIR/env with the
          variables to run the client with, printed too. A DIR that holds any of them already
          is refused: its service-account.json is the only copy of a key that is still
          registered. With --force they are replaced, and the key the old file held is
          removed from the store, so a client still using it is refused from then on

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
  --token-file FILE
      Envoy: a dataplane token (chancery token issue) for a mesh with dataplaneAuth: token
  --xds-ca-file PATH
      Envoy: dial Chancery over TLS, trusting this CA file, as the Envoy's host sees it;
      gRPC with --credentials-out: the CA file for GRPC_DEFAULT_SSL_ROOTS_FILE_PATH
  --credentials-out DIR
      gRPC: make a service account and write the files above into DIR
  --certificates DIR
      gRPC, mesh mTLS: the directory chancery agent keeps the node's certificate files in; adds the
      file_watcher certificate provider and the server listener template (docs/mtls.md)
  --force
      with --credentials-out: replace the files DIR holds, removing the old service account's key
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
      for (const flag of ['admin-port', 'delta', 'token-file'] as const) {
        if (values[flag] !== undefined) throw new UsageError(`--${flag} applies to envoy: a proxyless gRPC client has no admin listener, speaks SotW only, and proves who it is with a service account (--credentials-out)`);
      }
      if (values['xds-ca-file'] !== undefined && values['credentials-out'] === undefined) throw new UsageError('--xds-ca-file applies to gRPC with --credentials-out, whose env file names it');
      if (values['credentials-out'] !== undefined && values.output !== undefined) throw new UsageError('--credentials-out writes DIR/bootstrap.json; --output does not apply');
    } else if (values['credentials-out'] !== undefined) {
      throw new UsageError('--credentials-out applies to grpc; an Envoy takes --token-file');
    } else if (values.certificates !== undefined) {
      throw new UsageError('--certificates applies to grpc; an Envoy gets its certificates by SDS');
    }
    if (values.force && values['credentials-out'] === undefined) throw new UsageError('--force applies to --credentials-out: it replaces the files that DIR holds');
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
    const caFile = values['xds-ca-file'];
    if (caFile !== undefined && format === 'envoy') query.set('caFile', caFile);
    const credentialsOut = values['credentials-out'];
    // Checked before anything is made: a refusal leaves the store as it was.
    const replaced = credentialsOut === undefined ? undefined : await existingCredentials(credentialsOut, values.force === true);
    if (credentialsOut !== undefined) query.set('credentials', 'google_default');
    if (values.certificates !== undefined) query.set('certificates', values.certificates);
    const dataplane = resourcePath({ type: 'Dataplane', mesh: node.mesh, name: node.name });
    const client = clientFrom(values, io.env);
    const headers: Record<string, string> = values['token-file'] === undefined ? {} : { [TOKEN_HEADER]: await readToken(values['token-file']) };
    const bootstrap = await client.text(`${dataplane}/bootstrap?${query}`, headers);
    if (credentialsOut === undefined) {
      await writeOutput(io, bootstrap, values.output);
      return EXIT.ok;
    }
    const { body: account } = await client.request('POST', `${dataplane}/service-account`, {});
    io.stdout.write(await writeCredentials(credentialsOut, bootstrap, account, caFile));
    if (replaced !== undefined) io.stderr.write(`${await removeReplacedKey(client, replaced)}\n`);
    return EXIT.ok;
  },
};

async function readToken(file: string): Promise<string> {
  let token: string;
  try {
    token = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    throw new UsageError(`--token-file ${file}: ${(error as Error).message}`);
  }
  if (!/^[\x21-\x7e]+$/.test(token)) throw new UsageError(`--token-file ${file} must hold one token (chancery token issue), without spaces`);
  return token;
}

/**
 * Writes what an unchanged proxyless gRPC client needs into `dir`: its bootstrap, its service
 * account (readable by its owner only) and the environment naming them; answers the environment
 * as shell lines.
 */
async function writeCredentials(dir: string, bootstrap: string, account: unknown, caFile: string | undefined): Promise<string> {
  const files = { bootstrap: path.resolve(dir, 'bootstrap.json'), account: path.resolve(dir, 'service-account.json'), env: path.resolve(dir, 'env') };
  const env = [
    `GRPC_XDS_BOOTSTRAP=${files.bootstrap}`,
    `GOOGLE_APPLICATION_CREDENTIALS=${files.account}`,
    ...(caFile === undefined ? [] : [`GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=${path.resolve(caFile)}`]),
  ];
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(files.account, `${JSON.stringify(account, null, 2)}\n`, { mode: 0o600 });
    await writeFile(files.bootstrap, bootstrap);
    await writeFile(files.env, `${env.join('\n')}\n`);
  } catch (error) {
    throw new UsageError(`--credentials-out ${dir}: ${(error as Error).message}`);
  }
  return `${env.map((line) => `export ${line}`).join('\n')}\n`;
}

/** The files `--credentials-out` writes. */
const CREDENTIAL_FILES = ['service-account.json', 'bootstrap.json', 'env'] as const;

/** The service account a `--force` replaces: what its old key file said, if it held one. */
type Replaced = { readonly file: string } & ({ readonly kid: string; readonly mesh: string; readonly node: string } | { readonly kid?: undefined });

/**
 * Refuses a DIR that holds any of the files `--credentials-out` writes, unless `force`: its
 * service-account.json is the only copy of a private key the store still trusts, and writing
 * over it would leave that key registered with no one able to use or name it. With `force`,
 * answers the key file to replace (undefined when there is none).
 */
async function existingCredentials(dir: string, force: boolean): Promise<Replaced | undefined> {
  const found = CREDENTIAL_FILES.filter((name) => existsSync(path.join(dir, name)));
  if (found.length === 0) return undefined;
  const file = path.join(dir, 'service-account.json');
  const account = existsSync(file) ? await readAccount(file) : undefined;
  if (!force) {
    const held = account?.kid === undefined ? '' : `: its service-account.json holds the only copy of the private key ${account.kid} (node ${account.node}), which the store still trusts`;
    throw new UsageError(`--credentials-out ${dir} already holds ${found.join(', ')}${held}. Choose another DIR, or pass --force to replace them and remove the old key from the store`);
  }
  return account ?? { file };
}

/** What an existing key file says of its key; without a kid when it is not a service account Chancery made. */
async function readAccount(file: string): Promise<Replaced> {
  try {
    const { private_key_id: kid, client_email: node } = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    const parsed = typeof node === 'string' ? parseNodeId(node) : undefined;
    if (typeof kid === 'string' && typeof node === 'string' && parsed?.ok) return { file, kid, mesh: parsed.mesh, node };
  } catch {
    // Unreadable or not JSON: not a key Chancery can find, so there is nothing to remove.
  }
  return { file };
}

/** Removes the key a `--force` wrote over; answers what became of it. */
async function removeReplacedKey(client: ApiClient, replaced: Replaced): Promise<string> {
  if (replaced.kid === undefined) return `replaced ${replaced.file}, which held no service account Chancery made: no key removed`;
  const { kid, mesh, node } = replaced;
  try {
    await client.request('DELETE', `/meshes/${encodeURIComponent(mesh)}/service-account-keys/${encodeURIComponent(kid)}`);
  } catch (error) {
    if (error instanceof ApiRejectedError && error.status === 404) return `replaced the service account of node ${node}: its old key ${kid} was no longer in the store`;
    throw error;
  }
  return `replaced the service account of node ${node}: its old key ${kid} is removed from the store, and a client still using it is refused from now on`;
}
