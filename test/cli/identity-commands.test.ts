import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createControlPlane } from '../../src/index.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { runCli } from './cli-harness.js';

/**
 * The identity commands as a user types them: `ca`, `token`, `key`, `api-token` and the
 * credentials options of `bootstrap`, against a real control plane that asks for API tokens.
 */

let dir: string;
let harness: Harness;
let admin: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'chancery-identity-cli-'));
  harness = await startHarness({ apiAuth: 'token' });
  const { issueApiToken } = await import('../../src/identity/index.js');
  admin = (await issueApiToken(harness.cp.store, { name: 'ops', role: 'admin', now: Date.now() })).token;
  await harness.cp.apply({ type: 'Mesh', name: 'secure' });
  await harness.cp.apply(backendDataplane('web', 10001, 'web', 'secure'));
});
afterAll(async () => {
  await harness.stop();
  rmSync(dir, { recursive: true, force: true });
});

const cli = (argv: readonly string[], token = admin) => runCli(argv, { env: { CHANCERY_API_ADDRESS: harness.api, CHANCERY_API_TOKEN: token } });
const modeOf = (file: string) => statSync(file).mode & 0o777;
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

describe('chancery ca', () => {
  it('makes a CA and a certificate it signed for every --host, keys readable by their owner only', async () => {
    const ca = path.join(dir, 'ca');
    const server = path.join(dir, 'server');
    expect(await cli(['ca', 'init', '--out', ca])).toMatchObject({ code: 0 });
    const issued = await cli(['ca', 'issue', '--ca', ca, '--host', 'cp.example.com', '--host', '10.0.0.7', '--out', server, '--days', '30']);
    expect(issued.code, issued.stderr).toBe(0);
    expect(modeOf(path.join(ca, 'ca.key'))).toBe(0o600);
    expect(modeOf(path.join(server, 'tls.key'))).toBe(0o600);
    const authority = new X509Certificate(readFileSync(path.join(ca, 'ca.crt')));
    const certificate = new X509Certificate(readFileSync(path.join(server, 'tls.crt')));
    expect(authority.ca).toBe(true);
    expect(certificate.verify(authority.publicKey)).toBe(true);
    expect(certificate.subjectAltName).toBe('DNS:cp.example.com, IP Address:10.0.0.7');
    expect(Date.parse(certificate.validTo) - Date.parse(certificate.validFrom)).toBe(30 * 86_400_000);
  });

  it.each([
    [['ca', 'init'], /--out DIR is required/],
    [['ca', 'issue', '--out', 'x', '--ca', 'nowhere', '--host', 'h'], /--ca nowhere: cannot read ca\.crt/],
    [['ca', 'issue', '--out', 'x', '--ca', 'y'], /--host is required/],
    [['ca', 'init', '--out', 'x', '--days', '0'], /--days must be a whole number of days, at least 1/],
    [['ca', 'issue', '--out', 'x', '--ca', 'y', '--host', 'a b'], /--host must be a DNS name or an IP address/],
    [['ca', 'sign'], /unknown ca command "sign"/],
  ])('refuses %j with a message and exit 2', async (argv, message) => {
    const { code, stderr } = await cli(argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });

  it('never overwrites a CA', async () => {
    const ca = path.join(dir, 'ca-twice');
    expect((await cli(['ca', 'init', '--out', ca])).code).toBe(0);
    const before = readFileSync(path.join(ca, 'ca.key'), 'utf8');
    const again = await cli(['ca', 'init', '--out', ca]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already holds ca\.crt or ca\.key/);
    expect(readFileSync(path.join(ca, 'ca.key'), 'utf8')).toBe(before);
  });
});

describe('chancery token issue', () => {
  it('prints a token for the dataplane, or writes it readable by its owner only', async () => {
    const printed = await cli(['token', 'issue', '--mesh', 'secure', '--name', 'web', '--ttl', '2h']);
    expect(printed.code, printed.stderr).toBe(0);
    const claims = claimsOf(printed.stdout.trim());
    expect(claims).toMatchObject({ iss: 'chancery', sub: 'secure.web' });
    expect(Number(claims['exp']) - Number(claims['iat'])).toBe(7_200);
    expect(printed.stderr).toMatch(/token for node secure\.web, valid until/);
    const file = path.join(dir, 'web.token');
    expect((await cli(['token', 'issue', '--mesh', 'secure', '--name', 'web', '--output', file])).code).toBe(0);
    expect(modeOf(file)).toBe(0o600);
    expect(claimsOf(readFileSync(file, 'utf8').trim()).sub).toBe('secure.web');
  });

  it.each([
    [['token', 'issue', '--mesh', 'secure'], 2, /--mesh MESH and --name NAME are required/],
    [['token', 'issue', '--mesh', 'Secure', '--name', 'web'], 2, /--mesh must be a DNS label/],
    [['token', 'issue', '--mesh', 'secure', '--name', 'web', '--ttl', 'forever'], 1, /CHANCERY_IDENTITY_INVALID_TTL \(HTTP 400\).*ttl must be a duration/],
    [['token', 'issue', '--mesh', 'nowhere', '--name', 'web'], 1, /CHANCERY_STORE_NOT_FOUND \(HTTP 404\).*Mesh nowhere does not exist/],
    // A token for a node Chancery cannot serve speaks for nothing.
    [['token', 'issue', '--mesh', 'secure', '--name', 'ghost'], 1, /CHANCERY_STORE_NOT_FOUND \(HTTP 404\).*Dataplane secure\/ghost does not exist/],
  ])('refuses %j', async (argv, exit, message) => {
    const signingKeys = harness.cp.store.list('SigningKey').length;
    const { code, stderr } = await cli(argv);
    expect(code).toBe(exit);
    expect(stderr).toMatch(message);
    expect(harness.cp.store.list('SigningKey')).toHaveLength(signingKeys);
  });

  it('is refused to a reader, with the 403 the API answered', async () => {
    const reader = (await cli(['api-token', 'issue', '--name', 'viewer', '--role', 'reader'])).stdout.trim();
    const { code, stderr } = await cli(['token', 'issue', '--mesh', 'secure', '--name', 'web'], reader);
    expect(code).toBe(1);
    expect(stderr).toMatch(/CHANCERY_API_FORBIDDEN \(HTTP 403\)/);
    const anonymous = await runCli(['token', 'issue', '--mesh', 'secure', '--name', 'web'], { env: { CHANCERY_API_ADDRESS: harness.api } });
    expect(anonymous.stderr).toMatch(/CHANCERY_API_UNAUTHENTICATED \(HTTP 401\)/);
  });
});

describe('chancery key', () => {
  it('rotates, lists and removes the signing keys of a mesh', async () => {
    await cli(['token', 'issue', '--mesh', 'secure', '--name', 'web']);
    const rotated = await cli(['key', 'rotate', '--mesh', 'secure']);
    expect(rotated.code, rotated.stderr).toBe(0);
    const kid = /key ([0-9a-f]{40}) now signs/.exec(rotated.stdout)?.[1];
    const listed = (await cli(['key', 'list', '--mesh', 'secure'])).stdout.split('\n').slice(1).filter(Boolean);
    expect(listed.length).toBeGreaterThanOrEqual(2);
    expect(listed[0]).toMatch(new RegExp(`^${kid}\\s+\\S+\\s+yes$`));
    expect(claimsOf((await cli(['token', 'issue', '--mesh', 'secure', '--name', 'web'])).stdout.trim())).toBeDefined();
    const removed = await cli(['key', 'remove', '--mesh', 'secure', kid!]);
    expect(removed.stdout).toBe(`key ${kid} removed from mesh secure: the tokens it signed are revoked\n`);
    expect((await cli(['key', 'list', '--mesh', 'secure'])).stdout).not.toContain(kid);
    expect((await cli(['key', 'remove', '--mesh', 'secure', kid!])).stderr).toMatch(/CHANCERY_STORE_NOT_FOUND/);
  });
});

describe('chancery api-token', () => {
  it('issues, lists and revokes API tokens through the API', async () => {
    const issued = await cli(['api-token', 'issue', '--name', 'deployer', '--role', 'writer', '--meshes', 'secure,default', '--ttl', '30d']);
    expect(issued.code, issued.stderr).toBe(0);
    expect(issued.stdout).toMatch(/^chancery\.deployer\.\S+\n$/);
    expect(issued.stderr).toMatch(/API token "deployer" \(writer of default, secure\)/);
    expect((await cli(['api-token', 'list'])).stdout).toMatch(/deployer\s+writer\s+default,secure\s+/);
    const deployer = issued.stdout.trim();
    const manifest = path.join(dir, 'deployer.json');
    writeFileSync(manifest, JSON.stringify(backendDataplane('deployed', 10009, 'web', 'secure')));
    expect((await cli(['apply', '-f', manifest], deployer)).code).toBe(0);
    expect(harness.cp.get({ type: 'Dataplane', mesh: 'secure', name: 'deployed' })).toBeDefined();
    expect((await cli(['api-token', 'revoke', 'deployer'])).stdout).toBe('API token "deployer" revoked\n');
    expect((await cli(['get', 'meshes'], deployer)).stderr).toMatch(/HTTP 401/);
  });

  it('never writes over a file that may hold the only copy of a working token, unless --force says so', async () => {
    const file = path.join(dir, 'kept.token');
    expect((await cli(['api-token', 'issue', '--name', 'kept', '--role', 'reader', '--output', file])).code).toBe(0);
    const first = readFileSync(file, 'utf8');
    const again = await cli(['api-token', 'issue', '--name', 'kept-2', '--role', 'reader', '--output', file]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/--output .*kept\.token exists: it may hold the only copy of an API token that still works/);
    expect(readFileSync(file, 'utf8')).toBe(first);
    expect((await cli(['api-token', 'list'])).stdout).not.toMatch(/^kept-2 /m);

    const forced = await cli(['api-token', 'issue', '--name', 'kept-2', '--role', 'reader', '--output', file, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toMatch(/^chancery\.kept-2\./);
    expect(forced.stderr).toContain(`replaced ${file}: the token "kept" it held still works until revoked (chancery api-token revoke kept)`);
  });

  it('says plainly that a token it is asked to revoke does not exist', async () => {
    const { code, stderr } = await cli(['api-token', 'revoke', 'nobody']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/CHANCERY_STORE_NOT_FOUND \(HTTP 404\).*ApiToken nobody does not exist/);
    expect(stderr).not.toContain('nobody/nobody');
  });

  it('makes the first admin token straight in the store, which a control plane on that store then accepts', async () => {
    const store = `pglite:${path.join(dir, 'first-admin')}`;
    const file = path.join(dir, 'admin.token');
    const issued = await runCli(['api-token', 'issue', '--name', 'root', '--role', 'admin', '--store', store, '--output', file]);
    expect(issued.code, issued.stderr).toBe(0);
    expect(modeOf(file)).toBe(0o600);
    const cp = createControlPlane({ xdsAddress: '127.0.0.1:0', apiAddress: '127.0.0.1:0', store, apiAuth: 'token', logger: pino({ level: 'silent' }) });
    await cp.start();
    try {
      const answer = await runCli(['get', 'meshes'], { env: { CHANCERY_API_ADDRESS: cp.addresses.api!, CHANCERY_API_TOKEN: readFileSync(file, 'utf8').trim() } });
      expect(answer.code, answer.stderr).toBe(0);
      const event = (await cp.store.readEvents(0 as never, 10)).find((listed) => listed.key.type === 'ApiToken');
      expect(event?.by.caller).toBe('chancery api-token --store');
    } finally {
      await cp.stop();
    }
  });

  it.each([
    [['api-token', 'issue', '--role', 'admin'], /--name NAME is required/],
    [['api-token', 'issue', '--name', 'x', '--role', 'root'], /--role must be one of admin, writer, reader/],
    [['api-token', 'issue', '--name', 'x', '--role', 'admin', '--store', 'mysql://db'], /--store: /],
    [['api-token', 'revoke'], /say which token/],
    // A store that lives only inside the command: no server could ever read what it writes.
    [['api-token', 'issue', '--name', 'x', '--role', 'admin', '--store', 'memory'], /--store memory lives only inside this command .* would change nothing/],
    [['api-token', 'issue', '--name', 'x', '--role', 'admin', '--store', 'pglite:memory'], /--store pglite:memory lives only inside this command/],
    [['api-token', 'issue', '--name', 'x', '--role', 'admin', '--store', 'pglite:'], /--store pglite: lives only inside this command/],
    [['api-token', 'revoke', 'x', '--store', 'memory'], /--store memory lives only inside this command/],
    // A flag an action does not take is refused, never ignored: list --store would read through the API.
    [['api-token', 'list', '--store', `pglite:${path.join(tmpdir(), 'chancery-never-opened')}`], /--store does not apply to api-token list/],
    [['api-token', 'revoke', 'x', '--role', 'admin'], /--role does not apply to api-token revoke/],
    [['api-token', 'issue', '--name', 'x', '--role', 'reader', '--force'], /--force applies to --output/],
    [['api-token', 'issue', '--name', 'x', '--role', 'admin', '--store', `pglite:${path.join(tmpdir(), 'chancery-never-opened')}`, '--api-address', '127.0.0.1:1'], /--api-address does not apply with --store/],
    [['api-token', 'revoke', 'BAD_NAME'], /NAME must be a DNS label/],
  ])('refuses %j with exit 2', async (argv, message) => {
    const { code, stderr } = await cli(argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });
});

describe('chancery bootstrap with credentials', () => {
  it('puts the token of --token-file into an Envoy bootstrap, and TLS to Chancery with --xds-ca-file', async () => {
    const file = path.join(dir, 'envoy.token');
    writeFileSync(file, `${(await cli(['token', 'issue', '--mesh', 'secure', '--name', 'web'])).stdout.trim()}\n`);
    const printed = await cli(['bootstrap', 'envoy', '--node', 'secure.web', '--token-file', file, '--xds-ca-file', '/etc/chancery/ca.crt', '--xds', 'cp.example.com:5678']);
    expect(printed.code, printed.stderr).toBe(0);
    const bootstrap = parseYaml(printed.stdout);
    expect(bootstrap.dynamic_resources.ads_config.grpc_services[0].initial_metadata).toEqual([{ key: 'authorization', value: `Bearer ${readFileSync(file, 'utf8').trim()}` }]);
    const [cluster] = bootstrap.static_resources.clusters;
    expect(cluster.transport_socket.typed_config).toMatchObject({
      sni: 'cp.example.com',
      common_tls_context: { validation_context: { trusted_ca: { filename: '/etc/chancery/ca.crt' }, match_typed_subject_alt_names: [{ san_type: 'DNS', matcher: { exact: 'cp.example.com' } }] } },
    });
  });

  it('writes a gRPC client’s service account, bootstrap and environment into --credentials-out', async () => {
    const out = path.join(dir, 'grpc-web');
    const printed = await cli(['bootstrap', 'grpc', '--node', 'secure.web', '--credentials-out', out, '--xds-ca-file', '/etc/chancery/ca.crt']);
    expect(printed.code, printed.stderr).toBe(0);
    const account = JSON.parse(readFileSync(path.join(out, 'service-account.json'), 'utf8'));
    expect(account).toMatchObject({ type: 'service_account', client_email: 'secure.web', private_key_id: expect.stringMatching(/^[0-9a-f]{40}$/) });
    expect(modeOf(path.join(out, 'service-account.json'))).toBe(0o600);
    expect(JSON.parse(readFileSync(path.join(out, 'bootstrap.json'), 'utf8')).xds_servers[0].channel_creds).toEqual([{ type: 'google_default' }]);
    expect(printed.stdout).toBe(
      [
        `export GRPC_XDS_BOOTSTRAP=${path.join(out, 'bootstrap.json')}`,
        `export GOOGLE_APPLICATION_CREDENTIALS=${path.join(out, 'service-account.json')}`,
        'export GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=/etc/chancery/ca.crt',
        '',
      ].join('\n'),
    );
    // Only the public half is kept, registered for this dataplane alone.
    const [key] = harness.cp.store.list('ServiceAccountKey', 'secure').filter((stored) => stored.resource.name === account.private_key_id);
    expect(key?.resource).toMatchObject({ dataplane: 'web', publicKey: expect.stringContaining('PUBLIC KEY') });
    expect(JSON.stringify(key)).not.toContain('PRIVATE KEY');
  });

  it('never writes over the only copy of a registered key, unless --force says so, and then removes that key', async () => {
    const out = path.join(dir, 'grpc-twice');
    expect((await cli(['bootstrap', 'grpc', '--node', 'secure.web', '--credentials-out', out])).code).toBe(0);
    const file = path.join(out, 'service-account.json');
    const first = readFileSync(file, 'utf8');
    const oldKid = JSON.parse(first).private_key_id as string;
    const keys = () => harness.cp.store.list('ServiceAccountKey', 'secure').map((key) => key.resource.name);
    const registered = keys();

    const again = await cli(['bootstrap', 'grpc', '--node', 'secure.web', '--credentials-out', out]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(new RegExp(`already holds service-account\\.json, bootstrap\\.json, env: its service-account\\.json holds the only copy of the private key ${oldKid} \\(node secure\\.web\\).*--force`));
    expect(readFileSync(file, 'utf8')).toBe(first);
    expect(keys()).toEqual(registered);

    const forced = await cli(['bootstrap', 'grpc', '--node', 'secure.web', '--credentials-out', out, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    const newKid = JSON.parse(readFileSync(file, 'utf8')).private_key_id as string;
    expect(newKid).not.toBe(oldKid);
    expect(forced.stderr).toBe(`replaced the service account of node secure.web: its old key ${oldKid} is removed from the store, and a client still using it is refused from now on\n`);
    expect(keys()).toContain(newKid);
    expect(keys()).not.toContain(oldKid);
  });

  it.each([
    [['bootstrap', 'grpc', '--node', 'secure.web', '--force'], /--force applies to --credentials-out/],
    [['bootstrap', 'grpc', '--node', 'secure.web', '--token-file', 'f'], /--token-file applies to envoy/],
    [['bootstrap', 'envoy', '--node', 'secure.web', '--credentials-out', 'd'], /--credentials-out applies to grpc/],
    [['bootstrap', 'grpc', '--node', 'secure.web', '--xds-ca-file', 'ca'], /--xds-ca-file applies to gRPC with --credentials-out/],
    [['bootstrap', 'envoy', '--node', 'secure.web', '--token-file', '/nonexistent/token'], /--token-file \/nonexistent\/token: ENOENT/],
  ])('refuses %j with exit 2', async (argv, message) => {
    const { code, stderr } = await cli(argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });
});
