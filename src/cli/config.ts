import type { Logger } from 'pino';
import type { ControlPlaneOptions } from '../control-plane-options.js';
import { DEFAULTS } from '../defaults.js';
import { isLoopback } from '../common/index.js';
import type { TlsFilePaths } from '../identity/index.js';
import { parseInspectorUrl, parseNodePattern } from '../inspector/index.js';
import { parseStoreSpec } from '../store/index.js';
import { UsageError } from './errors.js';
import {
  keepsNothing,
  parseAddress,
  parseApiAuth,
  parseFile,
  parseByteSize,
  parseCount,
  parseInstanceId,
  parseLogFormat,
  parseLogLevel,
  parseOnOff,
  parseOptionalDuration,
  parsePositiveDuration,
  parseDuration,
  parseRetention,
  parseStore,
} from './option-parsers.js';

/** One setting: its flag, its environment variable, its default (as text) and its parser. */
export interface OptionSpec<T> {
  readonly flag: string;
  readonly env: string;
  /** Parsed like user input; undefined leaves the choice to `createControlPlane`. */
  readonly default: string | undefined;
  readonly value: string;
  readonly help: string;
  readonly parse: (text: string) => T;
}

/**
 * Every setting of `chancery run`, the one table flags, environment variables, defaults and
 * `--help` come from. Client commands use `apiAddress` from it too, so `chancery get` finds
 * the API where `chancery run` put it.
 */
export const RUN_OPTIONS = {
  xdsAddress: {
    flag: 'xds-address',
    env: 'CHANCERY_XDS_ADDRESS',
    default: DEFAULTS.xdsAddress,
    value: 'HOST:PORT',
    help: 'where dataplanes connect for xDS (gRPC)',
    parse: parseAddress,
  },
  apiAddress: {
    flag: 'api-address',
    env: 'CHANCERY_API_ADDRESS',
    default: DEFAULTS.apiAddress,
    value: 'HOST:PORT',
    help: 'the HTTP API',
    parse: parseAddress,
  },
  xdsTlsCert: tlsFile('xds', 'cert', 'serve xDS over TLS with this certificate (PEM; reloaded when it changes); needs --xds-tls-key'),
  xdsTlsKey: tlsFile('xds', 'key', "the xDS certificate's private key (PEM)"),
  xdsTlsClientCa: tlsFile('xds', 'client-ca', 'mutual TLS: dataplanes must present a certificate signed by this CA (PEM)'),
  apiTlsCert: tlsFile('api', 'cert', 'serve the API over HTTPS with this certificate (PEM; reloaded when it changes); needs --api-tls-key'),
  apiTlsKey: tlsFile('api', 'key', "the API certificate's private key (PEM)"),
  apiTlsClientCa: tlsFile('api', 'client-ca', 'mutual TLS: API clients must present a certificate signed by this CA (PEM)'),
  apiAuth: {
    flag: 'api-auth',
    env: 'CHANCERY_API_AUTH',
    default: undefined,
    value: 'none|token',
    help: 'token: API calls need an API token whose role allows them (/healthz, /readyz, /metrics and the UI files stay open); default none on a loopback --api-address, token otherwise; none on another address is refused',
    parse: parseApiAuth,
  },
  tlsReloadInterval: {
    flag: 'tls-reload-interval',
    env: 'CHANCERY_TLS_RELOAD_INTERVAL',
    default: `${DEFAULTS.tlsReloadInterval}ms`,
    value: 'DURATION',
    help: 'how often the TLS files are read again; a changed certificate is served to new connections without a restart',
    parse: parsePositiveDuration,
  },
  store: {
    flag: 'store',
    env: 'CHANCERY_STORE',
    default: DEFAULTS.store,
    value: 'memory|pglite:DIR|pglite:memory|postgres://…',
    help: 'where resources are kept; memory and pglite:memory (PGlite in memory) keep nothing once the process exits',
    parse: parseStore,
  },
  workers: {
    flag: 'workers',
    env: 'CHANCERY_WORKERS',
    default: '1',
    value: 'COUNT',
    help: 'processes serving xDS and the API on the same ports, one core each: every worker is an instance of its own (its sessions, its heartbeat) sharing the store, so more than 1 needs --store postgres://…',
    parse: parseCount,
  },
  instanceId: {
    flag: 'instance-id',
    env: 'CHANCERY_INSTANCE_ID',
    default: undefined,
    value: 'ID',
    help: 'names this instance in logs and events (default: generated)',
    parse: parseInstanceId,
  },
  refreshInterval: {
    flag: 'refresh-interval',
    env: 'CHANCERY_REFRESH_INTERVAL',
    default: `${DEFAULTS.refreshInterval}ms`,
    value: 'DURATION',
    help: 'watchdog tick, a safety net: store changes regenerate at once',
    parse: parsePositiveDuration,
  },
  evictionGrace: {
    flag: 'eviction-grace',
    env: 'CHANCERY_EVICTION_GRACE',
    default: `${DEFAULTS.evictionGrace}ms`,
    value: 'DURATION',
    help: 'how long a disconnected session is kept',
    parse: parseDuration,
  },
  recordInterval: {
    flag: 'record-interval',
    env: 'CHANCERY_RECORD_INTERVAL',
    default: `${DEFAULTS.recordInterval}ms`,
    value: 'DURATION',
    help: "how often this instance saves its session records and heartbeat for the fleet's view (GET /sessions?scope=fleet)",
    parse: parsePositiveDuration,
  },
  instanceTtl: {
    flag: 'instance-ttl',
    env: 'CHANCERY_INSTANCE_TTL',
    default: `${DEFAULTS.instanceTtl}ms`,
    value: 'DURATION',
    help: 'an instance that has not saved for this long is dead, and its session records expire',
    parse: parsePositiveDuration,
  },
  maxConnectionAge: {
    flag: 'max-connection-age',
    env: 'CHANCERY_MAX_CONNECTION_AGE',
    default: DEFAULTS.maxConnectionAge,
    value: 'off|DURATION',
    help: 'end streams this old (±10%) with UNAVAILABLE so dataplanes reconnect and the fleet rebalances (Istio: 30m)',
    parse: parseOptionalDuration,
  },
  drainPeriod: {
    flag: 'drain-period',
    env: 'CHANCERY_DRAIN_PERIOD',
    default: `${DEFAULTS.drainPeriod}ms`,
    value: 'DURATION',
    help: 'on SIGTERM or SIGINT, end the open streams spread over this long, then exit',
    parse: parseDuration,
  },
  pregenerate: {
    flag: 'pregenerate',
    env: 'CHANCERY_PREGENERATE',
    default: DEFAULTS.pregenerate ? 'on' : 'off',
    value: 'on|off',
    help: "generate every dataplane's configuration ahead of its node, while idle, so a failover or scale-out is served from encoded resources (about 2 KB a dataplane)",
    parse: parseOnOff,
  },
  retention: {
    flag: 'retention',
    env: 'CHANCERY_RETENTION',
    default: DEFAULTS.retention,
    value: 'off|EVENTS|AGE',
    help: 'event history to keep: off (all), the newest EVENTS (100000), or an AGE (30d, 12h); older events become a checkpoint',
    parse: parseRetention,
  },
  xdsMaxNodeIdLength: {
    flag: 'xds-max-node-id-length',
    env: 'CHANCERY_XDS_MAX_NODE_ID_LENGTH',
    default: String(DEFAULTS.xdsLimits.maxNodeIdLength),
    value: 'CHARACTERS',
    help: 'a longer node.id ends its stream with RESOURCE_EXHAUSTED (a valid <mesh>.<name> has at most 127)',
    parse: parseCount,
  },
  xdsMaxMetadataBytes: {
    flag: 'xds-max-metadata-bytes',
    env: 'CHANCERY_XDS_MAX_METADATA_BYTES',
    default: `${DEFAULTS.xdsLimits.maxNodeMetadataBytes / 1024}KiB`,
    value: 'SIZE',
    help: 'a larger node.metadata (encoded) ends its stream with RESOURCE_EXHAUSTED',
    parse: parseByteSize,
  },
  xdsMaxMetadataDepth: {
    flag: 'xds-max-metadata-depth',
    env: 'CHANCERY_XDS_MAX_METADATA_DEPTH',
    default: String(DEFAULTS.xdsLimits.maxNodeMetadataDepth),
    value: 'LEVELS',
    help: 'a node.metadata nested deeper ends its stream with RESOURCE_EXHAUSTED',
    parse: parseCount,
  },
  xdsMaxResourceNames: {
    flag: 'xds-max-resource-names',
    env: 'CHANCERY_XDS_MAX_RESOURCE_NAMES',
    default: String(DEFAULTS.xdsLimits.maxResourceNames),
    value: 'COUNT',
    help: 'a DiscoveryRequest naming more resources ends its stream with RESOURCE_EXHAUSTED',
    parse: parseCount,
  },
  xdsMaxRequestBytes: {
    flag: 'xds-max-request-bytes',
    env: 'CHANCERY_XDS_MAX_REQUEST_BYTES',
    default: `${DEFAULTS.xdsLimits.maxRequestBytes / 1_048_576}MiB`,
    value: 'SIZE',
    help: 'a larger request message is refused by gRPC with RESOURCE_EXHAUSTED',
    parse: parseByteSize,
  },
  xdsMaxStreamsPerConnection: {
    flag: 'xds-max-streams-per-connection',
    env: 'CHANCERY_XDS_MAX_STREAMS_PER_CONNECTION',
    default: String(DEFAULTS.xdsLimits.maxStreamsPerConnection),
    value: 'COUNT',
    help: 'a stream opened past this many on one connection ends at once with RESOURCE_EXHAUSTED (Envoy opens one)',
    parse: parseCount,
  },
  xdsMaxRequestsPerSecond: {
    flag: 'xds-max-requests-per-second',
    env: 'CHANCERY_XDS_MAX_REQUESTS_PER_SECOND',
    default: String(DEFAULTS.xdsLimits.maxRequestsPerSecond),
    value: 'COUNT',
    help: 'a stream sending more requests per second (in bursts of as many) is ended with RESOURCE_EXHAUSTED',
    parse: parseCount,
  },
  inspect: {
    flag: 'inspect',
    env: 'CHANCERY_INSPECT',
    default: undefined,
    value: 'WS-URL',
    help: "send the sessions chosen by --inspect-nodes live to a Stately inspector relay, such as createInspectorServer()'s ws://localhost:8080",
    parse: parseInspectorUrl,
  },
  inspectNodes: {
    flag: 'inspect-nodes',
    env: 'CHANCERY_INSPECT_NODES',
    default: undefined,
    value: 'PATTERN',
    help: 'node ids to inspect, comma-separated, * matching any characters (default.web-*,default.client); --inspect needs it',
    parse: parseNodePattern,
  },
  logLevel: {
    flag: 'log-level',
    env: 'CHANCERY_LOG_LEVEL',
    default: 'info',
    value: 'LEVEL',
    help: 'fatal, error, warn, info, debug, trace or silent',
    parse: parseLogLevel,
  },
  logFormat: {
    flag: 'log-format',
    env: 'CHANCERY_LOG_FORMAT',
    default: undefined,
    value: 'pretty|json',
    help: 'pretty: a line for a person (local time, level, message, fields); json: one JSON object a line, for a log collector (default: pretty on a terminal, json otherwise)',
    parse: parseLogFormat,
  },
} as const satisfies Record<string, OptionSpec<unknown>>;

/** A TLS file setting of the xDS or API listener: `--xds-tls-cert`, `CHANCERY_API_TLS_CLIENT_CA`, … */
function tlsFile(listener: 'xds' | 'api', part: 'cert' | 'key' | 'client-ca', help: string): OptionSpec<string> {
  return {
    flag: `${listener}-tls-${part}`,
    env: `CHANCERY_${listener.toUpperCase()}_TLS_${part.toUpperCase().replace('-', '_')}`,
    default: undefined,
    value: 'FILE',
    help,
    parse: parseFile,
  };
}

type Specs = Readonly<Record<string, OptionSpec<unknown>>>;

/** The settings a table yields: parsed values, undefined only where the table has no default. */
export type Resolved<TSpecs extends Specs> = {
  readonly [K in keyof TSpecs]: TSpecs[K] extends OptionSpec<infer T>
    ? TSpecs[K]['default'] extends string
      ? T
      : T | undefined
    : never;
};

export type RunConfig = Resolved<typeof RUN_OPTIONS>;

/** The `parseArgs` options for a table's flags, keyed by flag name: all take a value. */
export type FlagsOf<TSpecs extends Specs> = {
  readonly [K in keyof TSpecs as TSpecs[K]['flag']]: { readonly type: 'string' };
};

export function flagsOf<TSpecs extends Specs>(specs: TSpecs): FlagsOf<TSpecs> {
  return Object.fromEntries(Object.values(specs).map((spec) => [spec.flag, { type: 'string' }])) as FlagsOf<TSpecs>;
}

/**
 * Resolves each setting: the flag wins over the environment variable, which wins over the
 * default. An empty variable counts as unset. A bad value is a `UsageError` naming where it
 * came from.
 */
export function resolveOptions<TSpecs extends Specs>(
  specs: TSpecs,
  flags: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
): Resolved<TSpecs> {
  const resolved: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(specs)) {
    const flag = flags[spec.flag];
    const fromEnv = env[spec.env] === '' ? undefined : env[spec.env];
    const [text, origin] =
      typeof flag === 'string' ? [flag, `--${spec.flag}`] : fromEnv !== undefined ? [fromEnv, `${spec.env} (--${spec.flag})`] : [spec.default, 'default'];
    if (text === undefined) continue;
    try {
      resolved[key] = spec.parse(text);
    } catch (error) {
      throw new UsageError(`${origin}: ${(error as Error).message}`);
    }
  }
  return resolved as Resolved<TSpecs>;
}

/** What `createControlPlane` takes; the log level is already in `logger`. */
export function controlPlaneOptionsOf(config: RunConfig, logger: Logger): ControlPlaneOptions {
  checkFleetTiming(config);
  checkWorkers(config);
  return {
    xdsAddress: config.xdsAddress,
    apiAddress: config.apiAddress,
    store: config.store,
    ...(config.instanceId !== undefined && { instanceId: config.instanceId }),
    refreshInterval: config.refreshInterval,
    evictionGrace: config.evictionGrace,
    retention: config.retention,
    recordInterval: config.recordInterval,
    instanceTtl: config.instanceTtl,
    maxConnectionAge: config.maxConnectionAge,
    drainPeriod: config.drainPeriod,
    pregenerate: config.pregenerate,
    xdsLimits: {
      maxNodeIdLength: config.xdsMaxNodeIdLength,
      maxNodeMetadataBytes: config.xdsMaxMetadataBytes,
      maxNodeMetadataDepth: config.xdsMaxMetadataDepth,
      maxResourceNames: config.xdsMaxResourceNames,
      maxRequestBytes: config.xdsMaxRequestBytes,
      maxStreamsPerConnection: config.xdsMaxStreamsPerConnection,
      maxRequestsPerSecond: config.xdsMaxRequestsPerSecond,
    },
    ...inspectOf(config),
    ...tlsOf(config),
    ...apiAuthOf(config),
    tlsReloadInterval: config.tlsReloadInterval,
    logger,
  };
}

/** Each listener's TLS files: a certificate and its key together, and a client CA only beside them. */
function tlsOf(config: RunConfig): Pick<ControlPlaneOptions, 'xdsTls' | 'apiTls'> {
  const listener = (name: 'xds' | 'api', cert: string | undefined, key: string | undefined, clientCa: string | undefined): TlsFilePaths | undefined => {
    if (cert === undefined && key === undefined) {
      if (clientCa !== undefined) throw new UsageError(`--${name}-tls-client-ca needs --${name}-tls-cert and --${name}-tls-key: mutual TLS is TLS first`);
      return undefined;
    }
    if (cert === undefined || key === undefined) throw new UsageError(`--${name}-tls-cert and --${name}-tls-key go together`);
    return { cert, key, ...(clientCa !== undefined && { clientCa }) };
  };
  const xdsTls = listener('xds', config.xdsTlsCert, config.xdsTlsKey, config.xdsTlsClientCa);
  const apiTls = listener('api', config.apiTlsCert, config.apiTlsKey, config.apiTlsClientCa);
  return { ...(xdsTls && { xdsTls }), ...(apiTls && { apiTls }) };
}

/**
 * Anyone who reaches the API could rewrite the fleet, so without tokens it listens on loopback
 * only; anywhere else it needs `--api-auth token`, which is the default there.
 */
function apiAuthOf(config: RunConfig): Pick<ControlPlaneOptions, 'apiAuth'> {
  const host = config.apiAddress.slice(0, config.apiAddress.lastIndexOf(':'));
  const apiAuth = config.apiAuth ?? (isLoopback(host) ? 'none' : 'token');
  if (apiAuth === 'none' && !isLoopback(host)) {
    throw new UsageError(
      `--api-auth none on ${config.apiAddress} would let anyone who reaches it rewrite the fleet: listen on loopback (127.0.0.1) or use --api-auth token (docs/security.md, "Securing Chancery")`,
    );
  }
  // An API token is made in the store before the server reads it (`api-token issue --store`): in
  // one that lives only inside this process, none can ever be, and every call would be refused.
  if (apiAuth === 'token' && keepsNothing(config.store)) {
    throw new UsageError(
      `--api-auth token with --store ${config.store}: no API token can ever exist in a store that lives only inside this process, so every API call would be refused; use --store pglite:DIR or postgres://… and 'chancery api-token issue --store' first, or --api-auth none on a loopback --api-address`,
    );
  }
  return { apiAuth };
}

/**
 * An instance saves its records every `recordInterval` and is dead after `instanceTtl`
 * without a save: a ttl that a save or two late would pass makes live instances look dead.
 */
function checkFleetTiming(config: RunConfig): void {
  if (config.instanceTtl < 3 * config.recordInterval) {
    throw new UsageError(
      `--instance-ttl (${config.instanceTtl} ms) must be at least 3 × --record-interval (${config.recordInterval} ms), or live instances would look dead between saves`,
    );
  }
}

/** Workers are instances sharing one store: only Postgres is shared between processes. */
function checkWorkers(config: RunConfig): void {
  if (config.workers === 1 || parseStoreSpec(config.store).kind === 'postgres') return;
  throw new UsageError(
    `--workers ${config.workers} needs a store the workers share, --store postgres://…; ${config.store === 'memory' ? 'memory' : 'PGlite'} belongs to one process (use --workers 1)`,
  );
}

/**
 * Live inspection needs both where to send and which sessions: inspecting every session is
 * never a default (10,000 sessions would flood the inspector), and `*` must be asked for.
 */
function inspectOf(config: RunConfig): Pick<ControlPlaneOptions, 'inspect'> {
  const { inspect: url, inspectNodes: nodes } = config;
  if (url === undefined && nodes === undefined) return {};
  if (url === undefined) throw new UsageError('--inspect-nodes needs --inspect WS-URL: where to send the sessions');
  if (nodes === undefined) {
    throw new UsageError('--inspect needs --inspect-nodes PATTERN (such as default.web-*): which sessions to send; none are by default');
  }
  return { inspect: { url, nodes } };
}

/** `--help` lines for a table's flags. */
export function describeOptions(specs: Specs): string[] {
  return Object.values(specs).map((spec) => {
    const origin = spec.default === undefined ? `env ${spec.env}` : `env ${spec.env}, default ${spec.default}`;
    return `  --${spec.flag} ${spec.value}\n      ${spec.help} [${origin}]`;
  });
}
