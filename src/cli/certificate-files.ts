import { lstat, mkdir, readdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The files `chancery agent` keeps for a proxyless gRPC client, as `chancery bootstrap grpc
 * --certificates DIR` names them (Istio's agent writes the same three).
 */
export const CERTIFICATE_FILES = { certificate: 'cert-chain.pem', privateKey: 'key.pem', trustBundle: 'root-cert.pem' } as const;

export type CertificateFileContents = Readonly<Record<keyof typeof CERTIFICATE_FILES, string>>;

/** The link every file is read through; replacing it swaps the three at once. */
const CURRENT = '..data';

/**
 * Writes the three files so that a reader never sees a certificate with another's key: they go
 * into a new directory, and one rename of the `..data` link makes them current together (as
 * Kubernetes writes a volume's files). `DIR/<file>` are links through `..data`, made once. gRPC
 * re-reads each file separately every `refresh_interval` (reference/mtls.md §3), so renaming the
 * files one by one would not do. The key is readable by its owner only.
 */
export async function writeCertificateFiles(dir: string, contents: CertificateFileContents, stamp: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const version = `..${stamp}`;
  const target = path.join(dir, version);
  await mkdir(target, { mode: 0o700 });
  for (const [what, file] of Object.entries(CERTIFICATE_FILES) as [keyof typeof CERTIFICATE_FILES, string][]) {
    await writeFile(path.join(target, file), contents[what], { mode: what === 'privateKey' ? 0o600 : 0o644, flag: 'wx' });
  }
  const previous = await readlink(path.join(dir, CURRENT)).catch(() => undefined);
  const link = path.join(dir, `${CURRENT}_tmp`);
  await rm(link, { force: true });
  await symlink(version, link);
  await rename(link, path.join(dir, CURRENT));
  for (const file of Object.values(CERTIFICATE_FILES)) {
    const at = path.join(dir, file);
    if (!(await lstat(at).catch(() => undefined))?.isSymbolicLink()) await symlink(path.join(CURRENT, file), at);
  }
  // Versions before the previous one: a reader that resolved the previous link just now still finds it.
  for (const entry of await readdir(dir)) {
    if (entry.startsWith('..') && entry !== CURRENT && entry !== version && entry !== previous && entry !== `${CURRENT}_tmp`) {
      await rm(path.join(dir, entry), { recursive: true, force: true });
    }
  }
}
