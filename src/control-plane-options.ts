import type { Logger } from 'pino';
import type { Observable } from 'rxjs';
import type { ActorOptions, AnyStateMachine } from 'xstate';
import type { ControlPlaneMetrics, MetricsSource } from './api/index.js';
import type { TlsFilePaths } from './identity/index.js';
import type { InspectOptions } from './inspector/index.js';
import type { EventLog, Retention } from './store/index.js';
import type { SessionGateway, XdsLimits } from './xds/index.js';

/** How to run a control plane; `chancery run` builds this from flags and the environment. */
export interface ControlPlaneOptions {
  /** `host:port` for xDS (gRPC); port 0 lets the OS choose. Default `0.0.0.0:5678`. */
  readonly xdsAddress?: string;
  /** `host:port` for the HTTP API; `false` for none. Default `127.0.0.1:5681`. */
  readonly apiAddress?: string | false;
  /**
   * Serve xDS over TLS with these files (mutual TLS with `clientCa`). Required for proxyless
   * gRPC service accounts, whose clients send their JWTs only over TLS. Default plaintext.
   */
  readonly xdsTls?: TlsFilePaths;
  /** Serve the API over HTTPS with these files (mutual TLS with `clientCa`). Default plain HTTP. */
  readonly apiTls?: TlsFilePaths;
  /** ms between reads of the TLS files: a changed certificate is served without a restart. Default 1000. */
  readonly tlsReloadInterval?: number;
  /**
   * `token`: every API route but `/healthz`, `/readyz`, `/metrics` and the UI's files needs an API
   * token (`Authorization: Bearer …`) whose role allows the call. Default `none` when the API
   * listens on loopback, `token` otherwise.
   */
  readonly apiAuth?: 'none' | 'token';
  /**
   * `memory`, `pglite:<dir>` (embedded Postgres in-process), `postgres://…`, or an EventLog of
   * your own (yours to close). Default `pglite:./.chancery/data`.
   */
  readonly store?: string | EventLog;
  /** Names this instance in logs, event authors and the `control_plane.identifier` of responses. */
  readonly instanceId?: string;
  /**
   * How much event history to keep: `{ events: N }` the newest N events, `{ maxAge: ms }` the
   * events of the last `ms` milliseconds; older ones are folded into a checkpoint on start and
   * every minute, and reading a revision before it answers `CHANCERY_STORE_REVISION_COMPACTED`.
   * Default `'off'`: every event is kept.
   */
  readonly retention?: Retention | 'off';
  /** Watchdog interval in ms: a safety net; store changes regenerate at once. Default 1000. */
  readonly refreshInterval?: number;
  /** How long a disconnected session is kept before eviction, in ms. Default 10000. */
  readonly evictionGrace?: number;
  /**
   * ms between saves of this instance's session records and heartbeat in the store, which
   * every instance reads for `GET /sessions?scope=fleet`. Default 1000.
   */
  readonly recordInterval?: number;
  /** Replaces the `recordInterval` timer: each emission saves the session records. For tests and embedders. */
  readonly recordTicks?: Observable<unknown>;
  /** An instance that has not saved for this many ms is dead, and its session records expire. Default 15000. */
  readonly instanceTtl?: number;
  /**
   * ms after which a stream is ended with UNAVAILABLE (±10% jitter) and its connection told
   * GOAWAY, so that a fleet rebalances after a scale-out; Istio uses 30 minutes. Default `'off'`.
   */
  readonly maxConnectionAge?: number | 'off';
  /**
   * Generates every dataplane's configuration once per write, in the background while the
   * instance is idle, so that nodes it has never served (a failover from another instance, a
   * scale-out) are answered from encoded resources. Costs about 2 KB of memory a dataplane.
   * Default true.
   */
  readonly pregenerate?: boolean;
  /** ms over which `drain()` ends the streams of the instance. Default 5000. */
  readonly drainPeriod?: number;
  /**
   * What one xDS client may send; a stream crossing a limit is ended with RESOURCE_EXHAUSTED
   * or INVALID_ARGUMENT and a short reason. Each one left out is `DEFAULTS.xdsLimits`'s.
   */
  readonly xdsLimits?: Partial<XdsLimits>;
  /** A pino logger; default: pino at `info` to stdout. */
  readonly logger?: Logger;
  /** Replaces the watchdog's interval: each emission is a tick. For tests and embedders. */
  readonly watchdog?: Observable<unknown>;
  /**
   * For tests: stands between the xDS server and the sessions. Given what the server reports
   * streams, requests and closes to, it returns what the server reports to instead. The
   * model-based test keeps the sessions' side to deliver what the server itself no longer reads,
   * such as a superseded stream's late requests, and checks that the sessions ignore them (I4).
   */
  readonly sessionGateway?: (sessions: SessionGateway) => SessionGateway;
  /** The clock session timers run on (eviction grace); a `SimulatedClock` in tests. */
  readonly clock?: ActorOptions<AnyStateMachine>['clock'];
  /** Epoch ms, stamped on session events. Default `Date.now`. */
  readonly now?: () => number;
  /**
   * Sends the sessions of the nodes `inspect.nodes` chooses, live, to a Stately inspector
   * relay at `inspect.url` (`createInspectorServer()` of `@statelyai/inspect/server`). Off by
   * default; no session is inspected unless chosen.
   */
  readonly inspect?: InspectOptions;
  /**
   * What `GET /metrics` serves, given this control plane's own metrics (which it serves by
   * default). A worker of `chancery run --workers` serves the sum over every worker, so a scrape
   * of the shared port sees the whole host whichever worker answers it.
   */
  readonly metricsSource?: (own: ControlPlaneMetrics) => MetricsSource;
}
