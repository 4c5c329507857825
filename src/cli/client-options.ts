import { readFileSync } from 'node:fs';
import { ApiClient } from './api-client.js';
import { describeOptions, flagsOf, resolveOptions, RUN_OPTIONS, type OptionSpec } from './config.js';
import { UsageError } from './errors.js';
import { parseFile } from './option-parsers.js';

function parseToken(text: string): string {
  if (!/^\S+$/.test(text)) throw new Error('expected an API token (chancery.NAME.SECRET), without spaces');
  return text;
}

/** The settings every client command takes: where the API of a running instance is, and how to prove who you are to it. */
export const CLIENT_OPTIONS = {
  apiAddress: RUN_OPTIONS.apiAddress,
  token: {
    flag: 'token',
    env: 'CHANCERY_API_TOKEN',
    default: undefined,
    value: 'TOKEN',
    help: 'an API token, for an API that asks for one (chancery api-token issue)',
    parse: parseToken,
  },
  apiCa: {
    flag: 'api-ca',
    env: 'CHANCERY_API_CA',
    default: undefined,
    value: 'FILE',
    help: "speak HTTPS to the API, trusting this CA certificate (PEM): the API's --api-tls-cert must chain to it",
    parse: parseFile,
  },
  apiCert: {
    flag: 'api-cert',
    env: 'CHANCERY_API_CERT',
    default: undefined,
    value: 'FILE',
    help: 'a client certificate (PEM), for an API with --api-tls-client-ca; needs --api-key and --api-ca',
    parse: parseFile,
  },
  apiKey: {
    flag: 'api-key',
    env: 'CHANCERY_API_KEY',
    default: undefined,
    value: 'FILE',
    help: "the client certificate's key (PEM)",
    parse: parseFile,
  },
} as const satisfies Record<string, OptionSpec<unknown>>;

export const CLIENT_FLAGS = flagsOf(CLIENT_OPTIONS);

export const CLIENT_HELP = describeOptions(CLIENT_OPTIONS).join('\n');

/** A client for the API named by `--api-address`, `CHANCERY_API_ADDRESS`, or the default, with the token and TLS files given. */
export function clientFrom(flags: Readonly<Record<string, unknown>>, env: Readonly<Record<string, string | undefined>>): ApiClient {
  const { apiAddress, token, apiCa, apiCert, apiKey } = resolveOptions(CLIENT_OPTIONS, flags, env);
  if ((apiCert === undefined) !== (apiKey === undefined)) throw new UsageError('--api-cert and --api-key go together');
  if (apiCert !== undefined && apiCa === undefined) throw new UsageError('--api-cert needs --api-ca: a client certificate is sent over HTTPS only');
  return new ApiClient({
    address: apiAddress,
    ...(token !== undefined && { token }),
    ...(apiCa !== undefined && { ca: readFlagFile(apiCa, 'api-ca') }),
    ...(apiCert !== undefined && { cert: readFlagFile(apiCert, 'api-cert') }),
    ...(apiKey !== undefined && { key: readFlagFile(apiKey, 'api-key') }),
  });
}

/** A file a flag names, or a `UsageError` saying which flag and why. */
export function readFlagFile(file: string, flag: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new UsageError(`--${flag}: cannot read ${file}: ${(error as Error).message}`);
  }
}
