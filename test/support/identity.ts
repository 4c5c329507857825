import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createCertificateAuthority, issueCertificate } from '../../src/identity/index.js';
import { RpcFailed, startEchoProcess, type ClientEnvironment, type ClientXdsView, type ProxylessKind } from './real-clients/echo-process.js';

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

/** A real proxyless gRPC client in a process of its own making one RPC, configured only through its environment, as users run it. */
export interface ClientProcess {
  readonly outcome: Promise<ClientOutcome>;
  /** What the client's own xDS client has logged so far. */
  xds(): ClientXdsView;
  kill(): void;
}

/**
 * grpc-js-xds or Python's gRPC C-core calling `xds:///<service>` once, with `deadlineMs`, in a
 * child process; killing it before it answers makes the outcome that error.
 */
export function startClientProcess(kind: ProxylessKind, service: string, env: ClientEnvironment, deadlineMs: number): ClientProcess {
  const client = startEchoProcess(kind, service, env);
  const outcome = client.echo(deadlineMs).then(
    ({ servedBy }): ClientOutcome => ({ servedBy }),
    async (error: Error): Promise<ClientOutcome> => {
      if (error instanceof RpcFailed) return { error: error.message };
      const { signal } = await client.exited;
      if (signal !== null) return { error: `killed by ${signal}` };
      throw error;
    },
  );
  void outcome.finally(() => client.kill()).catch(() => undefined);
  return { outcome, xds: () => client.xds(), kill: () => client.kill() };
}

/** The total of `chancery_xds_pushes_total`: every response the control plane wrote. */
export async function responsesWritten(cp: { readonly metrics: { text(): Promise<string> } }): Promise<number> {
  const text = await cp.metrics.text();
  return [...text.matchAll(/^chancery_xds_pushes_total\{[^}]*\} (\d+)$/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}
