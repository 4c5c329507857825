import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { EXIT } from '../report-error.js';
import { isMeshCaAction, MESH_CA_HELP, runMeshCaAction } from './mesh-ca-actions.js';

const LOCAL_OPTIONS = {
  out: { type: 'string' },
  ca: { type: 'string' },
  host: { type: 'string', multiple: true },
  name: { type: 'string' },
  days: { type: 'string' },
} as const;
const MESH_OPTIONS = { mesh: { type: 'string' }, output: { type: 'string', short: 'o' }, ...CLIENT_FLAGS } as const;
const OPTIONS = { ...LOCAL_OPTIONS, ...MESH_OPTIONS } as const;

const DEFAULT_DAYS = { ca: 3650, certificate: 825 } as const;

export const caCommand: Command = {
  name: 'ca',
  summary: "manage a mesh's mTLS CAs; make a local CA and certificates for development",
  help: `Usage: chancery ca rotate|list --mesh MESH [-o json]
       chancery ca remove --mesh MESH ID
       chancery ca init --out DIR [--name NAME] [--days 3650]
       chancery ca issue --ca DIR --host HOST [--host HOST]... --out DIR [--days 825]

A mesh with mTLS has CAs in the store (docs/mtls.md); only an admin may rotate or remove them.
${MESH_CA_HELP}

init and issue are for trying TLS to Chancery itself (--xds-tls-*, --api-tls-*) without a PKI:
not a substitute for one in production.

  init     writes DIR/ca.crt and DIR/ca.key (readable by its owner only): a new CA
  issue    writes DIR/tls.crt and DIR/tls.key: a certificate signed by the CA in --ca, for every
           --host (DNS names and IP addresses; the first is also its common name), usable by a
           server (--xds-tls-cert, --api-tls-cert) and as a client certificate

Options:
  --out DIR
      where to write (created if missing; existing files are not overwritten)
  --ca DIR
      the directory 'ca init' wrote
  --host HOST
      a name or address clients dial, such as localhost, 127.0.0.1 or cp.example.com
  --name NAME
      the CA's common name [default "Chancery development CA"]
  --days N
      how long it is valid [default 3650 for a CA, 825 for a certificate]
  --mesh MESH
      the mesh whose CAs to manage
  -o json
      ca list: print the API's answer, trust bundle included
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    const [action] = positionals;
    if (isMeshCaAction(action)) {
      const local = Object.keys(LOCAL_OPTIONS).find((flag) => values[flag as keyof typeof LOCAL_OPTIONS] !== undefined);
      if (local !== undefined) throw new UsageError(`--${local} applies to ca init and issue, not ca ${action}`);
      return runMeshCaAction(action, positionals, { mesh: values.mesh, output: values.output, client: () => clientFrom(values, io.env) }, io);
    }
    atMost(positionals, 1);
    if (action !== 'init' && action !== 'issue') {
      throw new UsageError(action === undefined ? 'say what to do: rotate, list, remove, init or issue' : `unknown ca command "${action}": rotate, list, remove, init or issue`);
    }
    const remote = Object.keys(MESH_OPTIONS).find((flag) => values[flag as keyof typeof MESH_OPTIONS] !== undefined);
    if (remote !== undefined) throw new UsageError(`--${remote} applies to ca rotate, list and remove, not ca ${action}`);
    if (values.out === undefined) throw new UsageError('--out DIR is required: where the files go');
    const { createCertificateAuthority, issueCertificate } = await import('../../identity/index.js');
    if (action === 'init') {
      if (values.ca !== undefined || values.host !== undefined) throw new UsageError('--ca and --host apply to issue');
      const days = daysOf(values.days, DEFAULT_DAYS.ca);
      const ca = await createCertificateAuthority({ name: values.name ?? 'Chancery development CA', days });
      const files = await writePair(values.out, 'ca', ca);
      io.stdout.write(`CA written: ${files.join(', ')} (valid ${days} days)\n`);
      return EXIT.ok;
    }
    if (values.name !== undefined) throw new UsageError('--name applies to init; a certificate is named by its first --host');
    if (values.ca === undefined) throw new UsageError("--ca DIR is required: the directory 'chancery ca init' wrote");
    const hosts = values.host ?? [];
    if (hosts.length === 0) throw new UsageError('--host is required: the names and addresses clients dial (repeat it for several)');
    const bad = hosts.find((host) => !/^[A-Za-z0-9.:*-]+$/.test(host));
    if (bad !== undefined) throw new UsageError(`--host must be a DNS name or an IP address; got "${bad}"`);
    const authority = { certificate: await readCa(values.ca, 'ca.crt'), privateKey: await readCa(values.ca, 'ca.key') };
    const days = daysOf(values.days, DEFAULT_DAYS.certificate);
    let issued;
    try {
      issued = await issueCertificate(authority, { hosts, days });
    } catch (error) {
      throw new UsageError(`--ca ${values.ca} does not hold a usable CA: ${(error as Error).message}`);
    }
    const files = await writePair(values.out, 'tls', issued);
    io.stdout.write(`certificate for ${hosts.join(', ')} written: ${files.join(', ')} (valid ${days} days)\n`);
    return EXIT.ok;
  },
};

function daysOf(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1) throw new UsageError(`--days must be a whole number of days, at least 1; got "${text}"`);
  return Number(text);
}

async function readCa(dir: string, file: string): Promise<string> {
  try {
    return await readFile(path.join(dir, file), 'utf8');
  } catch (error) {
    throw new UsageError(`--ca ${dir}: cannot read ${file}: ${(error as Error).message}`);
  }
}

/** Writes `<base>.crt` and `<base>.key` into `dir`, the key readable by its owner only, never over existing files. */
async function writePair(dir: string, base: string, pair: { readonly certificate: string; readonly privateKey: string }): Promise<string[]> {
  const cert = path.join(dir, `${base}.crt`);
  const key = path.join(dir, `${base}.key`);
  if (existsSync(cert) || existsSync(key)) throw new UsageError(`${dir} already holds ${base}.crt or ${base}.key: remove them or choose another --out`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(key, pair.privateKey, { mode: 0o600, flag: 'wx' });
    await writeFile(cert, pair.certificate, { flag: 'wx' });
  } catch (error) {
    throw new UsageError(`--out ${dir}: ${(error as Error).message}`);
  }
  return [cert, key];
}
