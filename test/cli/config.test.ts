import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { controlPlaneOptionsOf, parseDuration, resolveOptions, RUN_OPTIONS, UsageError } from '../../src/cli/index.js';

const resolve = (flags: Record<string, string>, env: Record<string, string> = {}) => resolveOptions(RUN_OPTIONS, flags, env);

function usageMessage(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error('expected a UsageError');
}

describe('the run option table', () => {
  it('gives every setting its default when neither flag nor variable is set', () => {
    expect(resolve({})).toEqual({
      xdsAddress: '0.0.0.0:5678',
      apiAddress: '127.0.0.1:5681',
      store: 'pglite:./.chancery/data',
      workers: 1,
      refreshInterval: 1000,
      evictionGrace: 10_000,
      recordInterval: 1_000,
      instanceTtl: 15_000,
      maxConnectionAge: 'off',
      drainPeriod: 5_000,
      pregenerate: true,
      retention: 'off',
      logLevel: 'info',
      tlsReloadInterval: 1_000,
      xdsMaxNodeIdLength: 256,
      xdsMaxMetadataBytes: 65_536,
      xdsMaxMetadataDepth: 16,
      xdsMaxResourceNames: 10_000,
      xdsMaxRequestBytes: 4_194_304,
      xdsMaxStreamsPerConnection: 100,
      xdsMaxRequestsPerSecond: 100,
    });
  });

  it('reads the xDS limits as counts and sizes, from flags or variables (issue 11)', () => {
    expect(resolve({ 'xds-max-request-bytes': '1MiB', 'xds-max-metadata-bytes': '512' })).toMatchObject({
      xdsMaxRequestBytes: 1_048_576,
      xdsMaxMetadataBytes: 512,
    });
    expect(resolve({}, { CHANCERY_XDS_MAX_STREAMS_PER_CONNECTION: '1000' }).xdsMaxStreamsPerConnection).toBe(1_000);
    expect(controlPlaneOptionsOf(resolve({ 'xds-max-requests-per-second': '20' }), pino({ level: 'silent' })).xdsLimits).toMatchObject({
      maxRequestsPerSecond: 20,
      maxStreamsPerConnection: 100,
    });
  });

  it('serves the API without tokens only on loopback, with tokens by default anywhere else', () => {
    const logger = pino({ level: 'silent' });
    expect(controlPlaneOptionsOf(resolve({}), logger).apiAuth).toBe('none');
    expect(controlPlaneOptionsOf(resolve({ 'api-address': '[::1]:5681' }), logger).apiAuth).toBe('none');
    expect(controlPlaneOptionsOf(resolve({ 'api-address': '0.0.0.0:5681' }), logger).apiAuth).toBe('token');
    expect(controlPlaneOptionsOf(resolve({ 'api-address': '127.0.0.1:5681', 'api-auth': 'token' }), logger).apiAuth).toBe('token');
    expect(usageMessage(() => controlPlaneOptionsOf(resolve({ 'api-address': '10.0.0.7:5681', 'api-auth': 'none' }), logger))).toMatch(
      /--api-auth none on 10\.0\.0\.7:5681 would let anyone who reaches it rewrite the fleet/,
    );
    expect(usageMessage(() => resolve({ 'api-auth': 'basic' }))).toBe('--api-auth: expected none or token; got "basic"');
  });

  it('refuses API tokens over a store that lives only in the process, where no token can ever be made', () => {
    const logger = pino({ level: 'silent' });
    for (const store of ['memory', 'pglite:memory', 'pglite:']) {
      expect(usageMessage(() => controlPlaneOptionsOf(resolve({ store, 'api-auth': 'token' }), logger))).toMatch(
        new RegExp(`^--api-auth token with --store ${store}: no API token can ever exist in a store that lives only inside this process`),
      );
    }
    // Tokens are the default off loopback: the same refusal.
    expect(usageMessage(() => controlPlaneOptionsOf(resolve({ store: 'memory', 'api-address': '0.0.0.0:5681' }), logger))).toMatch(/^--api-auth token with --store memory/);
    expect(controlPlaneOptionsOf(resolve({ store: 'memory' }), logger).apiAuth).toBe('none');
    expect(controlPlaneOptionsOf(resolve({ store: 'pglite:./data', 'api-auth': 'token' }), logger).apiAuth).toBe('token');
  });

  it('takes TLS files per listener, a certificate with its key, a client CA only beside them', () => {
    const logger = pino({ level: 'silent' });
    expect(controlPlaneOptionsOf(resolve({ 'xds-tls-cert': 'c.pem', 'xds-tls-key': 'k.pem', 'xds-tls-client-ca': 'ca.pem' }), logger)).toMatchObject({
      xdsTls: { cert: 'c.pem', key: 'k.pem', clientCa: 'ca.pem' },
    });
    expect(controlPlaneOptionsOf(resolve({}, { CHANCERY_API_TLS_CERT: 'c.pem', CHANCERY_API_TLS_KEY: 'k.pem' }), logger)).toMatchObject({ apiTls: { cert: 'c.pem', key: 'k.pem' } });
    expect(usageMessage(() => controlPlaneOptionsOf(resolve({ 'xds-tls-cert': 'c.pem' }), logger))).toBe('--xds-tls-cert and --xds-tls-key go together');
    expect(usageMessage(() => controlPlaneOptionsOf(resolve({ 'api-tls-client-ca': 'ca.pem' }), logger))).toMatch(/--api-tls-client-ca needs --api-tls-cert and --api-tls-key/);
  });

  it('refuses an --instance-ttl shorter than 3 × --record-interval: live instances would look dead', () => {
    const logger = pino({ level: 'silent' });
    expect(() => controlPlaneOptionsOf(resolve({ 'record-interval': '10s' }), logger)).toThrow(
      /--instance-ttl \(15000 ms\) must be at least 3 × --record-interval \(10000 ms\)/,
    );
    expect(controlPlaneOptionsOf(resolve({ 'record-interval': '5s' }), logger)).toMatchObject({ recordInterval: 5_000, instanceTtl: 15_000 });
  });

  it('runs more than one worker only on a store the workers share: Postgres', () => {
    const logger = pino({ level: 'silent' });
    for (const store of ['memory', 'pglite:./data']) {
      expect(usageMessage(() => controlPlaneOptionsOf(resolve({ workers: '2', store }), logger))).toMatch(/^--workers 2 needs a store the workers share, --store postgres:\/\/…;/);
    }
    expect(controlPlaneOptionsOf(resolve({ workers: '1', store: 'memory' }), logger)).toMatchObject({ store: 'memory' });
    expect(resolve({}, { CHANCERY_WORKERS: '2', CHANCERY_STORE: 'postgres://db/chancery' })).toMatchObject({ workers: 2 });
    expect(usageMessage(() => resolve({ workers: '0' }))).toMatch(/^--workers: expected a whole number of at least 1; got "0"/);
  });

  it('reads --max-connection-age as off or a duration, and refuses anything else naming the flag', () => {
    expect(resolve({ 'max-connection-age': '30m' }).maxConnectionAge).toBe(1_800_000);
    expect(resolve({}, { CHANCERY_MAX_CONNECTION_AGE: 'off' }).maxConnectionAge).toBe('off');
    expect(() => resolve({ 'max-connection-age': '0s' })).toThrow(/--max-connection-age: must be longer than 0/);
    expect(() => resolve({ 'max-connection-age': 'soon' })).toThrow(/--max-connection-age: expected a duration/);
    expect(() => resolve({}, { CHANCERY_INSTANCE_TTL: '-1s' })).toThrow(/CHANCERY_INSTANCE_TTL \(--instance-ttl\): expected a duration/);
  });

  it('takes a variable over the default and a flag over the variable', () => {
    const env = { CHANCERY_XDS_ADDRESS: '10.0.0.1:15678', CHANCERY_INSTANCE_ID: 'cp-env', CHANCERY_LOG_LEVEL: 'warn' };
    expect(resolve({}, env)).toMatchObject({ xdsAddress: '10.0.0.1:15678', instanceId: 'cp-env', logLevel: 'warn' });
    expect(resolve({ 'xds-address': '127.0.0.1:0', 'instance-id': 'cp-flag' }, env)).toMatchObject({
      xdsAddress: '127.0.0.1:0',
      instanceId: 'cp-flag',
      logLevel: 'warn',
    });
  });

  it('turns generation ahead of the nodes off by flag or variable', () => {
    expect(resolve({ pregenerate: 'off' }).pregenerate).toBe(false);
    expect(resolve({}, { CHANCERY_PREGENERATE: 'off' }).pregenerate).toBe(false);
    expect(resolve({ pregenerate: 'on' }, { CHANCERY_PREGENERATE: 'off' }).pregenerate).toBe(true);
    expect(controlPlaneOptionsOf(resolve({ pregenerate: 'off' }), pino({ level: 'silent' })).pregenerate).toBe(false);
  });

  it('treats an empty variable as unset', () => {
    expect(resolve({}, { CHANCERY_STORE: '' }).store).toBe('pglite:./.chancery/data');
  });

  it('accepts every store form and IPv6 addresses', () => {
    expect(resolve({ store: 'pglite:./.chancery/data' }).store).toBe('pglite:./.chancery/data');
    expect(resolve({ store: 'memory' }).store).toBe('memory');
    expect(resolve({ store: 'postgres://chancery@db:5432/xds' }).store).toBe('postgres://chancery@db:5432/xds');
    expect(resolve({ 'api-address': '[::1]:5681' }).apiAddress).toBe('[::1]:5681');
  });

  it.each([
    [{ 'xds-address': '5678' }, {}, /^--xds-address: expected host:port/],
    [{ 'api-address': 'localhost:99999' }, {}, /^--api-address: expected host:port/],
    [{ store: 'mysql://db' }, {}, /^--store: store "mysql:\/\/db" is not supported: use one of memory, pglite:<dir>/],
    [{ store: 'sqlite:x.db' }, {}, /^--store: /],
    [{ 'refresh-interval': '0s' }, {}, /^--refresh-interval: must be longer than 0/],
    [{ 'eviction-grace': 'ten seconds' }, {}, /^--eviction-grace: expected a duration/],
    [{ 'log-level': 'verbose' }, {}, /^--log-level: expected one of fatal, error/],
    [{ 'instance-id': 'has space' }, {}, /^--instance-id: /],
    [{ retention: '0' }, {}, /^--retention: must keep at least 1 event/],
    [{ retention: 'forever' }, {}, /^--retention: expected off, a number of events such as 100000, or an age such as 30d/],
    [{}, { CHANCERY_RETENTION: '30 days' }, /^CHANCERY_RETENTION \(--retention\): expected off/],
    [{}, { CHANCERY_REFRESH_INTERVAL: 'soon' }, /^CHANCERY_REFRESH_INTERVAL \(--refresh-interval\): expected a duration/],
    [{ 'xds-max-resource-names': '0' }, {}, /^--xds-max-resource-names: expected a whole number of at least 1; got "0"/],
    [{ 'xds-max-request-bytes': '4MB' }, {}, /^--xds-max-request-bytes: expected a size such as 65536, 64KiB or 4MiB/],
    [{}, { CHANCERY_XDS_MAX_METADATA_DEPTH: 'deep' }, /^CHANCERY_XDS_MAX_METADATA_DEPTH \(--xds-max-metadata-depth\): expected a whole number/],
    [{ pregenerate: 'yes' }, {}, /^--pregenerate: expected on or off; got "yes"/],
  ])('refuses %o (env %o), naming where the value came from', (flags, env, message) => {
    expect(usageMessage(() => resolve(flags, env))).toMatch(message);
  });

  it('maps the settings onto ControlPlaneOptions, leaving the instance id to the control plane when unset', () => {
    const logger = pino({ level: 'silent' });
    const options = controlPlaneOptionsOf(resolve({ 'refresh-interval': '250ms' }), logger);
    expect(options).toEqual({
      xdsAddress: '0.0.0.0:5678',
      apiAddress: '127.0.0.1:5681',
      store: 'pglite:./.chancery/data',
      refreshInterval: 250,
      evictionGrace: 10_000,
      retention: 'off',
      recordInterval: 1_000,
      instanceTtl: 15_000,
      maxConnectionAge: 'off',
      drainPeriod: 5_000,
      pregenerate: true,
      apiAuth: 'none',
      tlsReloadInterval: 1_000,
      xdsLimits: {
        maxNodeIdLength: 256,
        maxNodeMetadataBytes: 65_536,
        maxNodeMetadataDepth: 16,
        maxResourceNames: 10_000,
        maxRequestBytes: 4_194_304,
        maxStreamsPerConnection: 100,
        maxRequestsPerSecond: 100,
      },
      logger,
    });
    expect('instanceId' in options).toBe(false);
  });
});

describe('retention', () => {
  it.each([
    ['off', 'off'],
    ['100000', { events: 100_000 }],
    ['1', { events: 1 }],
    ['30d', { maxAge: 30 * 86_400_000 }],
    ['12h', { maxAge: 12 * 3_600_000 }],
    ['1.5h', { maxAge: 5_400_000 }],
    ['90m', { maxAge: 5_400_000 }],
    ['45s', { maxAge: 45_000 }],
  ])('reads --retention %s as %o, from a flag or CHANCERY_RETENTION', (text, retention) => {
    expect(resolve({ retention: text }).retention).toEqual(retention);
    expect(resolve({}, { CHANCERY_RETENTION: text }).retention).toEqual(retention);
  });

  it('passes the retention to the control plane', () => {
    expect(controlPlaneOptionsOf(resolve({ retention: '500' }), pino({ level: 'silent' })).retention).toEqual({ events: 500 });
  });

  it.each(['', 'all', '-5', '0s', '1e3', '30 d', '10ms', '2w'])('refuses %j', (text) => {
    expect(() => resolve({ retention: text })).toThrow(UsageError);
  });
});

describe('durations', () => {
  it.each([
    ['500ms', 500],
    ['1s', 1000],
    ['1.5s', 1500],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['1500', 1500],
    ['0', 0],
  ])('reads %s as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '1 s', '-1s', '1d', 's', '1e3'])('refuses %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/expected a duration/);
  });
});
