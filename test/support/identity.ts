import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { createCertificateAuthority, issueCertificate } from '../../src/identity/index.js';
import { testPython } from './python.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** A development CA, a certificate it signed for localhost and 127.0.0.1, and a CA that signed nothing here. */
export interface TlsFixture {
  readonly dir: string;
  /** The CA's certificate file: what clients trust. */
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
  /** Another CA's certificate file: a client trusting only it cannot verify the server. */
  readonly otherCa: string;
  /** Writes a fresh certificate for the same names from the same CA over `cert` and `key`; answers its PEM. */
  reissue(): Promise<string>;
  /** A client certificate from the CA, for mutual TLS: its certificate and key files. */
  clientCertificate(name: string): Promise<{ readonly cert: string; readonly key: string }>;
  remove(): void;
}

export async function tlsFixture(): Promise<TlsFixture> {
  const dir = mkdtempSync(path.join(tmpdir(), 'chancery-tls-'));
  const authority = await createCertificateAuthority({ name: 'Chancery test CA', days: 2 });
  const other = await createCertificateAuthority({ name: 'Some other CA', days: 2 });
  const files = { ca: path.join(dir, 'ca.crt'), cert: path.join(dir, 'tls.crt'), key: path.join(dir, 'tls.key'), otherCa: path.join(dir, 'other-ca.crt') };
  writeFileSync(files.ca, authority.certificate);
  writeFileSync(files.otherCa, other.certificate);
  const reissue = async () => {
    const issued = await issueCertificate(authority, { hosts: ['localhost', '127.0.0.1'], days: 1 });
    // The key first: a reload between the two writes sees a certificate that does not match it, and keeps the old pair.
    writeFileSync(files.key, issued.privateKey);
    writeFileSync(files.cert, issued.certificate);
    return issued.certificate;
  };
  await reissue();
  const clientCertificate = async (name: string) => {
    const issued = await issueCertificate(authority, { hosts: [name], days: 1 });
    const paths = { cert: path.join(dir, `${name}.crt`), key: path.join(dir, `${name}.key`) };
    writeFileSync(paths.cert, issued.certificate);
    writeFileSync(paths.key, issued.privateKey);
    return paths;
  };
  return { dir, ...files, reissue, clientCertificate, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** What one real proxyless client process reported: the backend that served its RPC, or the RPC's failure. */
export type ClientOutcome = { readonly servedBy: string } | { readonly error: string };

/** A real proxyless gRPC client in a process of its own, configured only through its environment, as users run it. */
export interface ClientProcess {
  readonly outcome: Promise<ClientOutcome>;
  /** What the client's own xDS client has logged so far. */
  xds(): ClientXdsView;
  kill(): void;
}

/**
 * A client's own account of its ADS streams, read from the trace gRPC writes with
 * `GRPC_TRACE=xds_client` (both clients: the status each stream ended with, and each response):
 * what it received, as opposed to what Chancery says it sent.
 */
export interface ClientXdsView {
  /** How each ADS stream ended, by gRPC status name (`UNAUTHENTICATED`), with its details. */
  readonly streamEnds: ReadonlyArray<{ readonly code: string; readonly details: string }>;
  /**
   * Trace lines only a received response produces: C-core logs "received ADS response" for each;
   * grpc-js logs each resource it parses, and ACKs or NACKs each response with its nonce.
   */
  readonly responses: number;
}

// C-core: `ADS call status received (xds_channel=…, …): UNAUTHENTICATED: <details>`.
const CORE_STREAM_END = /ADS call status received \([^)]*\): ([A-Z_]+)(?:: (.*))?$/;
const CORE_RESPONSE = /received ADS response:/;
// grpc-js-xds: `ADS stream ended. code=16 details= <details>`.
const GRPC_JS_STREAM_END = /ADS stream ended\. code=(\d+) details= ?(.*)$/;
const GRPC_JS_RESPONSE = /"response_nonce": "[^"]+"|Parsed resource of type|Failed to parse resource|ADS response field parsing failed|Type state not found/;

/** Reads one line of a client's xDS trace into `view`. */
function readTraceLine(kind: 'grpc-js' | 'python', line: string, view: { streamEnds: Array<{ code: string; details: string }>; responses: number }): void {
  if (kind === 'python') {
    const end = CORE_STREAM_END.exec(line);
    if (end) view.streamEnds.push({ code: end[1]!, details: end[2] ?? '' });
    if (CORE_RESPONSE.test(line)) view.responses++;
    return;
  }
  const end = GRPC_JS_STREAM_END.exec(line);
  if (end) view.streamEnds.push({ code: status[Number(end[1])] ?? end[1]!, details: end[2] ?? '' });
  if (GRPC_JS_RESPONSE.test(line)) view.responses++;
}

export interface ClientEnvironment {
  readonly GRPC_XDS_BOOTSTRAP: string;
  readonly GOOGLE_APPLICATION_CREDENTIALS?: string;
  readonly GRPC_DEFAULT_SSL_ROOTS_FILE_PATH?: string;
}

/**
 * grpc-js-xds or Python's gRPC C-core calling `xds:///<service>` once, with `deadlineMs`, in a
 * child process: gRPC reads these variables once per process, so each client needs its own.
 */
export function startClientProcess(kind: 'grpc-js' | 'python', service: string, env: ClientEnvironment, deadlineMs: number): ClientProcess {
  const [command, args] =
    kind === 'grpc-js'
      ? [process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/fixtures/xds-echo-once.ts'), service, String(deadlineMs)]]
      : [testPython(), [path.join(ROOT, 'test/fixtures/xds_echo_once.py'), service, String(deadlineMs)]];
  const child = spawn(command, args, {
    cwd: ROOT,
    // The clients' own xDS trace (to stderr): how their ADS streams ended and what they received.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, GRPC_TRACE: 'xds_client', GRPC_VERBOSITY: 'DEBUG', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const view = { streamEnds: [] as Array<{ code: string; details: string }>, responses: 0 };
  let partial = '';
  child.stderr.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    stderr = (stderr + text).slice(-4000);
    const lines = (partial + text).split('\n');
    partial = lines.pop()!;
    for (const line of lines) readTraceLine(kind, line, view);
  });
  const outcome = new Promise<ClientOutcome>((resolve, reject) => {
    child.once('exit', (code, signal) => {
      const line = stdout.split('\n').find((text) => text.startsWith('{'));
      if (line !== undefined) resolve(JSON.parse(line) as ClientOutcome);
      else if (signal !== null) resolve({ error: `killed by ${signal}` });
      else reject(new Error(`${kind} client exited ${code} without an outcome:\n${stderr}`));
    });
  });
  return { outcome, xds: () => ({ streamEnds: [...view.streamEnds], responses: view.responses }), kill: () => child.kill('SIGKILL') };
}

/** The total of `chancery_xds_pushes_total`: every response the control plane wrote. */
export async function responsesWritten(cp: { readonly metrics: { text(): Promise<string> } }): Promise<number> {
  const text = await cp.metrics.text();
  return [...text.matchAll(/^chancery_xds_pushes_total\{[^}]*\} (\d+)$/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}
