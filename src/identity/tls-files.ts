import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';
import { ChanceryError } from '../common/index.js';
import { namesOfCertificate } from './certificate-authority.js';

/** Where a listener's TLS material is: its certificate and key, and the CA client certificates must chain to. */
export interface TlsFilePaths {
  readonly cert: string;
  readonly key: string;
  /** When set, clients must present a certificate signed by this CA (mutual TLS). */
  readonly clientCa?: string;
}

/** What a TLS listener serves now. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly clientCa?: Buffer;
}

/** A certificate, key or CA file that cannot be read, or that do not make a TLS context together. */
export class TlsFilesError extends ChanceryError {
  readonly code = 'CHANCERY_IDENTITY_TLS_FILES';
  constructor(what: string, paths: TlsFilePaths, options: { cause: unknown }) {
    super(`${what} (${[paths.cert, paths.key, paths.clientCa].filter(Boolean).join(', ')}): ${(options.cause as Error).message}`, options);
  }
}

/**
 * A listener's TLS files, read at start and read again every `reloadInterval` ms: a changed
 * certificate is served to new connections without a restart. A change that does not make a
 * valid context (a certificate written before its key) is logged and the previous one kept,
 * until the files agree again.
 */
export class TlsFiles {
  readonly #paths: TlsFilePaths;
  readonly #logger: Logger;
  readonly #listeners = new Set<(material: TlsMaterial) => void>();
  #material: TlsMaterial;
  #names: readonly string[];
  #timer: NodeJS.Timeout | undefined;
  #rejected: string | undefined;

  /** Reads the files now; throws `TlsFilesError` when they are missing or do not fit together. */
  constructor(paths: TlsFilePaths, options: { readonly logger: Logger; readonly reloadInterval: number }) {
    this.#paths = paths;
    this.#logger = options.logger;
    let material: TlsMaterial;
    try {
      material = read(paths);
    } catch (error) {
      throw new TlsFilesError('cannot read the TLS files', paths, { cause: error });
    }
    this.#material = checked(material, paths);
    this.#names = namesOfCertificate(this.#material.cert);
    this.#timer = setInterval(() => this.reload(), options.reloadInterval);
    this.#timer.unref();
  }

  get material(): TlsMaterial {
    return this.#material;
  }

  /** The DNS names and addresses the certificate is for: what clients may dial it by. */
  get names(): readonly string[] {
    return this.#names;
  }

  /** Calls `listener` with each new material; returns the unsubscribe. */
  onChange(listener: (material: TlsMaterial) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reads the files again, and serves them if they changed and make a valid context. */
  reload(): void {
    let next: TlsMaterial;
    try {
      next = read(this.#paths);
    } catch (error) {
      return this.#reject(`cannot read: ${(error as Error).message}`);
    }
    if (same(next, this.#material)) return;
    try {
      checked(next, this.#paths);
    } catch (error) {
      return this.#reject((error as Error).message);
    }
    this.#rejected = undefined;
    this.#material = next;
    this.#names = namesOfCertificate(next.cert);
    this.#logger.info({ cert: this.#paths.cert, names: this.#names }, 'TLS certificate reloaded');
    for (const listener of this.#listeners) listener(next);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #reject(reason: string): void {
    // Once per distinct problem: the files are polled, and a half-written pair stays half-written for a while.
    if (this.#rejected === reason) return;
    this.#rejected = reason;
    this.#logger.warn({ cert: this.#paths.cert, key: this.#paths.key, reason }, 'TLS files changed but are not usable; still serving the previous certificate');
  }
}

function read(paths: TlsFilePaths): TlsMaterial {
  return {
    cert: readFileSync(paths.cert),
    key: readFileSync(paths.key),
    ...(paths.clientCa !== undefined && { clientCa: readFileSync(paths.clientCa) }),
  };
}

function checked(material: TlsMaterial, paths: TlsFilePaths): TlsMaterial {
  try {
    createSecureContext({ cert: material.cert, key: material.key, ...(material.clientCa && { ca: material.clientCa }) });
    namesOfCertificate(material.cert);
  } catch (error) {
    throw new TlsFilesError('the TLS files do not make a certificate and its key', paths, { cause: error });
  }
  return material;
}

function same(a: TlsMaterial, b: TlsMaterial): boolean {
  return a.cert.equals(b.cert) && a.key.equals(b.key) && (a.clientCa === undefined ? b.clientCa === undefined : b.clientCa !== undefined && a.clientCa.equals(b.clientCa));
}

/** The TLS files of both listeners, each followed for changes; `stop` stops following them all. */
export interface FollowedTlsFiles {
  readonly xds?: TlsFiles;
  readonly api?: TlsFiles;
  stop(): void;
}

/**
 * Reads the TLS files of each listener given, before anything is opened: files that cannot be
 * served fail the start (`TlsFilesError`) with none left followed.
 */
export function followTlsFiles(paths: { readonly xds?: TlsFilePaths; readonly api?: TlsFilePaths }, options: { readonly logger: Logger; readonly reloadInterval: number }): FollowedTlsFiles {
  const xds = paths.xds && new TlsFiles(paths.xds, options);
  let api: TlsFiles | undefined;
  try {
    api = paths.api && new TlsFiles(paths.api, options);
  } catch (error) {
    xds?.stop();
    throw error;
  }
  return {
    ...(xds && { xds }),
    ...(api && { api }),
    stop: () => {
      xds?.stop();
      api?.stop();
    },
  };
}
