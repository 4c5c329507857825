import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { API_ROLES, DNS_LABEL_RULE, isDnsLabel, type ApiRole } from '../../mesh/index.js';
import type { IssuedApiToken } from '../../identity/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { RUN_OPTIONS } from '../config.js';
import { UsageError } from '../errors.js';
import { formatTable } from '../format-table.js';
import { keepsNothing, parseStore } from '../option-parsers.js';
import { EXIT } from '../report-error.js';
import { writeOutput } from '../write-output.js';

const OPTIONS = {
  name: { type: 'string' },
  role: { type: 'string' },
  meshes: { type: 'string' },
  ttl: { type: 'string' },
  output: { type: 'string' },
  force: { type: 'boolean' },
  store: { type: 'string' },
  ...CLIENT_FLAGS,
} as const;

/** The flags of each action beside the API client's; one given to an action that does not take it is refused, never ignored. */
const ACTION_FLAGS: Readonly<Record<string, readonly string[]>> = {
  issue: ['name', 'role', 'meshes', 'ttl', 'output', 'force', 'store'],
  list: [],
  revoke: ['store'],
};

interface ShownToken {
  readonly name: string;
  readonly role: ApiRole;
  readonly meshes: readonly string[];
  readonly expiresAt: string;
}

export const apiTokenCommand: Command = {
  name: 'api-token',
  summary: 'issue, list or revoke the tokens API callers present (--api-auth token)',
  help: `Usage: chancery api-token issue --name NAME --role admin|writer|reader [--meshes M1,M2] [--ttl 365d] [--output FILE [--force]] [--store SPEC]
       chancery api-token list
       chancery api-token revoke NAME [--store SPEC]

An API token names its caller (the author of every write it makes) and its role:
  admin    everything, and alone manages API tokens and signing keys
  writer   what a reader may, and writes the meshes --meshes names: the Mesh itself, its
           Dataplanes, their dataplane tokens and service accounts
  reader   GETs: resources, events, /sessions, the UI

The token is printed once; only its SHA-256 is stored. Revoking deletes it: it stops working at
once, on every instance.

With --store, the command writes to the store directly instead of through the API: how the
first admin token is made (whoever can write the database is an admin already). With a pglite
store, do it before 'chancery run' opens the same directory. A store that lives only inside
this command (memory, pglite:memory) is refused: a token made there could never be used.

Options:
  --name NAME
      a DNS label naming the caller (required to issue)
  --role ROLE
      admin, writer or reader (required to issue)
  --meshes M1,M2
      the meshes a writer may write (required for a writer)
  --ttl DURATION
      how long it is valid, such as 90d or 12h [default 365d]
  --output FILE
      write the token to FILE (readable by its owner only) instead of stdout; a FILE that
      exists is refused, as it may hold the only copy of a token that still works
  --force
      with --output: replace the FILE that exists (the token it held still works until revoked)
  --store SPEC
      ${RUN_OPTIONS.store.value}: write to this store instead of through the API
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    const [action, name] = positionals;
    if (action !== undefined) onlyFlagsOf(action, values);
    switch (action) {
      case 'issue': {
        atMost(positionals, 1);
        const request = issueRequest(values);
        // Checked before anything is made: a refusal leaves the store as it was.
        const replaced = values.output === undefined ? undefined : await tokenToReplace(values.output, values.force === true);
        const issued = values.store === undefined ? ((await clientFrom(values, io.env).request('POST', '/api-tokens', request)).body as IssuedApiToken) : await withStore(values.store, (store) => store.issue(request));
        await writeOutput(io, `${issued.token}\n`, values.output, { secret: true });
        const scope = issued.role === 'writer' ? ` of ${issued.meshes.join(', ')}` : '';
        io.stderr.write(`API token "${issued.name}" (${issued.role}${scope}), valid until ${issued.expiresAt}${values.output === undefined ? '' : `, written to ${values.output}`}\n`);
        if (replaced !== undefined) io.stderr.write(`${replaced}\n`);
        return EXIT.ok;
      }
      case 'list': {
        atMost(positionals, 1);
        const { items } = (await clientFrom(values, io.env).request('GET', '/api-tokens')).body as { items: ShownToken[] };
        io.stdout.write(formatTable(['NAME', 'ROLE', 'MESHES', 'EXPIRES'], items.map((token) => [token.name, token.role, token.meshes.join(','), token.expiresAt])));
        return EXIT.ok;
      }
      case 'revoke': {
        atMost(positionals, 2);
        if (name === undefined) throw new UsageError('say which token: chancery api-token revoke NAME');
        if (!isDnsLabel(name)) throw new UsageError(`NAME ${DNS_LABEL_RULE}; got "${name}"`);
        if (values.store === undefined) await clientFrom(values, io.env).request('DELETE', `/api-tokens/${encodeURIComponent(name)}`);
        else await withStore(values.store, (store) => store.revoke(name));
        io.stdout.write(`API token "${name}" revoked\n`);
        return EXIT.ok;
      }
      default:
        throw new UsageError(action === undefined ? 'say what to do: issue, list or revoke' : `unknown api-token command "${action}": issue, list or revoke`);
    }
  },
};

/** Refuses a flag the action does not take, and the API client's flags beside --store, which does without the API. */
function onlyFlagsOf(action: string, values: Readonly<Record<string, unknown>>): void {
  const takes = ACTION_FLAGS[action];
  if (takes === undefined) return;
  for (const flag of Object.keys(values)) {
    const own = Object.hasOwn(OPTIONS, flag) && !Object.hasOwn(CLIENT_FLAGS, flag);
    if (own && !takes.includes(flag)) throw new UsageError(`--${flag} does not apply to api-token ${action}`);
    if (!own && values['store'] !== undefined) throw new UsageError(`--${flag} does not apply with --store, which writes to the store without the API`);
  }
  if (values['force'] !== undefined && values['output'] === undefined) throw new UsageError('--force applies to --output: it replaces the FILE that exists');
}

/**
 * Refuses an `--output` FILE that exists, unless `force`: it may hold the only copy of an API
 * token that still works, which nothing could show again. With `force`, answers what becomes
 * of the token it held (undefined when FILE does not exist).
 */
async function tokenToReplace(file: string, force: boolean): Promise<string | undefined> {
  if (!existsSync(file)) return undefined;
  if (!force) throw new UsageError(`--output ${file} exists: it may hold the only copy of an API token that still works. Choose another file, or pass --force to replace it`);
  const held = /^chancery\.([^.\s]+)\.\S+$/.exec((await readFile(file, 'utf8').catch(() => '')).trim())?.[1];
  return held === undefined
    ? `replaced ${file}, which held no API token`
    : `replaced ${file}: the token "${held}" it held still works until revoked (chancery api-token revoke ${held})`;
}

interface IssueRequest {
  readonly name: string;
  readonly role: string;
  readonly meshes?: readonly string[];
  readonly ttl?: string;
}

function issueRequest(values: { name?: string; role?: string; meshes?: string; ttl?: string }): IssueRequest {
  if (values.name === undefined) throw new UsageError('--name NAME is required: who the caller is');
  if (values.role === undefined || !(API_ROLES as readonly string[]).includes(values.role)) throw new UsageError(`--role must be one of ${API_ROLES.join(', ')}`);
  return {
    name: values.name,
    role: values.role,
    ...(values.meshes !== undefined && { meshes: values.meshes.split(',').map((mesh) => mesh.trim()).filter((mesh) => mesh !== '') }),
    ...(values.ttl !== undefined && { ttl: values.ttl }),
  };
}

interface DirectStore {
  issue(request: IssueRequest): Promise<IssuedApiToken>;
  revoke(name: string): Promise<void>;
}

/** Runs `work` against the store itself, opened for it and closed after; the author is this command. */
async function withStore<T>(spec: string, work: (store: DirectStore) => Promise<T>): Promise<T> {
  try {
    parseStore(spec);
  } catch (error) {
    throw new UsageError(`--store: ${(error as Error).message}`);
  }
  if (keepsNothing(spec)) {
    throw new UsageError(`--store ${spec} lives only inside this command and is gone when it ends: no server reads it, so a token issued or revoked there would change nothing. Give the store 'chancery run' uses (pglite:DIR or postgres://…), or leave out --store to go through the API`);
  }
  // Loaded here: only this path needs the store's drivers.
  const [{ createResourceStore, openEventLog }, { issueApiToken, parseTtl }] = await Promise.all([import('../../store/index.js'), import('../../identity/index.js')]);
  const instance = `chancery-cli-${process.pid}`;
  const log = await openEventLog(spec, { instance });
  const store = createResourceStore(log, { instance });
  try {
    await store.start();
    const caller = 'chancery api-token --store';
    return await work({
      issue: (request) =>
        issueApiToken(
          store,
          { name: request.name, role: request.role as ApiRole, ...(request.meshes && { meshes: request.meshes }), ...(request.ttl !== undefined && { ttl: parseTtl(request.ttl) }), now: Date.now() },
          { caller },
        ),
      revoke: (name) => store.delete({ type: 'ApiToken', mesh: name, name }, { caller }),
    });
  } finally {
    await store.close();
    await log.close();
  }
}
