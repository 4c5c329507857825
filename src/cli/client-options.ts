import { ApiClient } from './api-client.js';
import { describeOptions, flagsOf, resolveOptions, RUN_OPTIONS } from './config.js';

/** The settings every client command takes: where the API of a running instance is. */
export const CLIENT_OPTIONS = { apiAddress: RUN_OPTIONS.apiAddress };

export const CLIENT_FLAGS = flagsOf(CLIENT_OPTIONS);

export const CLIENT_HELP = describeOptions(CLIENT_OPTIONS).join('\n');

/** A client for the API named by `--api-address`, `CHANCERY_API_ADDRESS`, or the default. */
export function clientFrom(flags: Readonly<Record<string, unknown>>, env: Readonly<Record<string, string | undefined>>): ApiClient {
  return new ApiClient(resolveOptions(CLIENT_OPTIONS, flags, env).apiAddress);
}
