import { readFileSync } from 'node:fs';
import { newCertificateRequest } from '../../identity/index.js';
import { parseNodeId } from '../../mesh/index.js';
import { CERTIFICATE_FILES, writeCertificateFiles } from '../certificate-files.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import type { CliIo } from '../cli-io.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { EXIT } from '../report-error.js';

const OPTIONS = {
  node: { type: 'string' },
  dir: { type: 'string' },
  'token-file': { type: 'string' },
  once: { type: 'boolean' },
  ...CLIENT_FLAGS,
} as const;

/** ms before a failed renewal is tried again, doubling up to the most; always well before the certificate expires. */
const RETRY = { first: 1_000, most: 30_000 } as const;

interface Signed {
  readonly certificate: string;
  readonly trustBundle: string;
  readonly serial: string;
  readonly notAfter: string;
  readonly renewAt: string;
}

export const agentCommand: Command = {
  name: 'agent',
  summary: "keep a proxyless gRPC dataplane's certificate files: key made here, renewed before expiry",
  help: `Usage: chancery agent --node MESH.NAME --dir DIR [--token-file FILE] [--once]

Keeps the mTLS files of a proxyless gRPC dataplane on its host (docs/mtls.md): makes a private key
here (it never leaves this host), sends Chancery a certificate signing request, and writes
DIR/${CERTIFICATE_FILES.certificate}, DIR/${CERTIFICATE_FILES.privateKey} and DIR/${CERTIFICATE_FILES.trustBundle}
together (one rename swaps all three), then does it again at 2/3 of the certificate's life.
Point the client's bootstrap at DIR: chancery bootstrap grpc --node MESH.NAME --certificates DIR.

It proves it is the dataplane as its xDS stream does: in a mesh with dataplaneAuth: token, with
the dataplane's token (--token-file, or CHANCERY_DATAPLANE_TOKEN).

Options:
  --node MESH.NAME
      the dataplane (required)
  --dir DIR
      where the files go (created if missing; required)
  --token-file FILE
      the dataplane's token (chancery token issue)
  --once
      get one certificate and exit
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 0);
    if (values.node === undefined) throw new UsageError('--node MESH.NAME is required');
    const node = parseNodeId(values.node);
    if (!node.ok) throw new UsageError(`--node: ${node.reason}`);
    if (values.dir === undefined) throw new UsageError('--dir DIR is required: where the certificate files go');
    if (values.token !== undefined) throw new UsageError('--token is an API token; the agent proves who it is with the dataplane’s token: --token-file');
    const token = values['token-file'] === undefined ? io.env.CHANCERY_DATAPLANE_TOKEN : readToken(values['token-file']);
    const client = clientFrom({ ...values, token }, { ...io.env, CHANCERY_API_TOKEN: undefined });
    const path = `/meshes/${encodeURIComponent(node.mesh)}/dataplanes/${encodeURIComponent(node.name)}/certificate`;
    const dir = values.dir;

    const renew = async (): Promise<Signed> => {
      const request = await newCertificateRequest(values.node!);
      const signed = (await client.request('POST', path, { csr: request.csr })).body as Signed;
      await writeCertificateFiles(dir, { certificate: signed.certificate, privateKey: request.privateKey, trustBundle: signed.trustBundle }, signed.serial);
      io.stdout.write(`certificate ${signed.serial} for ${values.node} written to ${dir}, valid until ${signed.notAfter}; renewed at ${signed.renewAt}\n`);
      return signed;
    };

    if (values.once === true) {
      await renew();
      return EXIT.ok;
    }
    return keepRenewing(renew, io);
  },
};

/** Renews at each certificate's renewal time, and sooner again after a failure, until asked to stop. */
async function keepRenewing(renew: () => Promise<Signed>, io: CliIo): Promise<number> {
  let stopped = false;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  void io.stopRequested().then((signal) => {
    stopped = true;
    io.stderr.write(`${signal}: stopping; the files stay as they are\n`);
    clearTimeout(timer);
    wake?.();
  });
  let retry: number = RETRY.first;
  let next = (await renew()).renewAt;
  while (!stopped) {
    await new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, Math.max(0, Date.parse(next) - Date.now()));
    });
    if (stopped) break;
    try {
      next = (await renew()).renewAt;
      retry = RETRY.first;
    } catch (error) {
      // The certificate held stays valid for a third of its life: retried well within it.
      io.stderr.write(`renewing failed, the files keep the certificate they hold; trying again in ${retry / 1000}s: ${(error as Error).message}\n`);
      next = new Date(Date.now() + retry).toISOString();
      retry = Math.min(retry * 2, RETRY.most);
    }
  }
  return EXIT.ok;
}

function readToken(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new UsageError(`--token-file: cannot read ${file}: ${(error as Error).message}`);
  }
}
