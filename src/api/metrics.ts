import { AggregatorRegistry, collectDefaultMetrics, Counter, exponentialBuckets, Gauge, Registry } from 'prom-client';
import { filter, type Observable, type Subscription } from 'rxjs';
import { SESSION_STATES, sessionStateOf, type SessionState, type TransitionRecord } from '../machines/index.js';
import type { SessionCallbacks } from '../sessions/index.js';
import type { Projection } from '../store/index.js';
import { PROTOCOLS, PUSH_ORDER, REFUSAL_REASONS, type Protocol, type Refusal, type RequestKind, type TypeUrl, type XdsResponse } from '../xds/index.js';
import { CountedHistogram, type HistogramSeries } from './counted-histogram.js';

/** What the metrics read from the session registry at scrape time, never per event. */
export interface SessionCensus {
  counts(): Readonly<Record<SessionState, number>>;
  /** Epoch ms at which the longest-waiting parked request arrived; undefined when none waits. */
  oldestParkedSince(): number | undefined;
  /** Sessions holding a stream, by the protocol it speaks. */
  streams(): Readonly<Record<Protocol, number>>;
}

export interface ControlPlaneMetricsOptions {
  /** The registry to count; a thunk because the registry is built with these metrics as its observer. */
  readonly sessions: () => SessionCensus;
  /** Epoch ms: the clock parked requests and event times are measured against. */
  readonly now: () => number;
  /** The soonest `notAfter` (epoch ms) of the workload certificates this instance's nodes hold; undefined when none. */
  readonly soonestCertificateExpiry?: () => number | undefined;
  /** xDS connections accepted and waiting for the connect window, and those taken on and not answered yet. */
  readonly connections?: () => { readonly waiting: number; readonly connecting: number };
}

/** Per type URL, the labelled child of a histogram: bound once, so observing allocates nothing. */
type PerType<T> = Readonly<Record<TypeUrl, T>>;

function perType<T>(make: (typeUrl: TypeUrl) => T): PerType<T> {
  return Object.fromEntries(PUSH_ORDER.map((typeUrl) => [typeUrl, make(typeUrl)])) as Record<TypeUrl, T>;
}

let processRegistry: Registry | undefined;

/**
 * Node's default metrics (event-loop lag p50/p90/p99, heap, GC, CPU, handles) describe the
 * process, not a control plane: they are collected once per process, on a registry of their
 * own (never prom-client's global one), and merged into every control plane's scrape.
 */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * One control plane's Prometheus metrics, on a registry of its own so that two control planes
 * in one process do not clash. Every label comes from a bounded set (state, type URL): a
 * series per node would grow without bound and is what kills a Prometheus server; per-node
 * detail is in `GET /sessions/{node}`. Families are registered once, here; the hot paths
 * (requests, pushes, transitions) add to plain numbers or to pre-bound children.
 *
 * @example
 * ```ts
 * const cp = createControlPlane({ apiAddress: false, store: 'memory' });
 * await cp.start();
 * const text = await cp.metrics.text(); // or merge cp.metrics.registry into your own
 * ```
 */
export class ControlPlaneMetrics implements SessionCallbacks {
  readonly registry = new Registry();
  readonly #now: () => number;
  /** Session state changes so far, by the state left and the state entered: few of the 25 pairs ever occur. */
  readonly #transitions = new Map<SessionState, Map<SessionState, number>>();
  readonly #pushes: Record<TypeUrl, number>;
  readonly #pushBytes: Record<TypeUrl, number>;
  readonly #acks: Record<TypeUrl, number>;
  readonly #nacks: Record<TypeUrl, number>;
  readonly #responseBytes: PerType<HistogramSeries>;
  readonly #generation: HistogramSeries;
  readonly #pregenerations: Counter;
  readonly #changeFeedLag: HistogramSeries;
  readonly #rollouts: HistogramSeries;
  readonly #refusals: Counter<'reason'>;
  readonly #apiDenials: Counter<'status'>;
  readonly #certificatesIssued: Counter;
  readonly #certificateRenewals: Counter;

  constructor(options: ControlPlaneMetricsOptions) {
    this.#now = options.now;
    // Started with the first control plane, so the first scrape already has event-loop samples.
    processMetrics();
    const registers = [this.registry];
    const now = options.now;

    new Gauge({
      name: 'chancery_sessions',
      help: 'Sessions of this instance, by state of the session chart.',
      labelNames: ['state'],
      registers,
      collect() {
        const counts = options.sessions().counts();
        for (const state of SESSION_STATES) this.set({ state }, counts[state]);
      },
    });
    new Gauge({
      name: 'chancery_xds_streams',
      help: 'Sessions holding a stream, by the xDS protocol it speaks (sotw or delta).',
      labelNames: ['protocol'],
      registers,
      collect() {
        const streams = options.sessions().streams();
        for (const protocol of PROTOCOLS) this.set({ protocol }, streams[protocol]);
      },
    });
    new Gauge({
      name: 'chancery_xds_connections',
      help: 'xDS connections in a connect storm: waiting (accepted, not taken on yet) and connecting (taken on, not answered yet).',
      labelNames: ['state'],
      registers,
      collect() {
        const { waiting, connecting } = options.connections?.() ?? { waiting: 0, connecting: 0 };
        this.set({ state: 'waiting' }, waiting);
        this.set({ state: 'connecting' }, connecting);
      },
    });
    new Gauge({
      name: 'chancery_parked_requests',
      help: 'First requests waiting for a snapshot (sessions in awaiting-snapshot).',
      registers,
      collect() {
        this.set(options.sessions().counts()['awaiting-snapshot']);
      },
    });
    new Gauge({
      name: 'chancery_parked_request_oldest_age_seconds',
      help: 'How long the longest-waiting parked request has waited; 0 when none waits.',
      // Over the workers of `chancery run --workers`: the longest wait of all, not their sum.
      aggregator: 'max',
      registers,
      collect() {
        const since = options.sessions().oldestParkedSince();
        this.set(since === undefined ? 0 : Math.max(0, now() - since) / 1000);
      },
    });
    // Counted as plain numbers and handed to prom-client when scraped: prom-client hashes the
    // labels of every `inc`, bound children's too, and a push and its ACK counted three (bench/README.md).
    const transitions = this.#transitions;
    new Counter({
      name: 'chancery_session_transitions_total',
      help: 'Session state changes, by the states left and entered.',
      labelNames: ['from', 'to'],
      registers,
      collect() {
        this.reset();
        for (const [from, byTo] of transitions) for (const [to, count] of byTo) this.inc({ from, to }, count);
      },
    });
    // Every type URL's series exists from the start, at 0, so rate() and absence alerts work at once.
    const byType = (name: string, help: string): Record<TypeUrl, number> => {
      const counts = Object.fromEntries(PUSH_ORDER.map((typeUrl) => [typeUrl, 0])) as Record<TypeUrl, number>;
      new Counter({
        name,
        help,
        labelNames: ['type_url'],
        registers,
        collect() {
          this.reset();
          for (const typeUrl of PUSH_ORDER) this.inc({ type_url: typeUrl }, counts[typeUrl]);
        },
      });
      return counts;
    };
    this.#pushes = byType('chancery_xds_pushes_total', 'DiscoveryResponses written, by type URL.');
    this.#pushBytes = byType('chancery_xds_push_bytes_total', 'Bytes of DiscoveryResponses written, by type URL.');
    this.#acks = byType('chancery_xds_acks_total', 'Requests answering a response nonce without error_detail (ACKs), by type URL.');
    this.#nacks = byType('chancery_xds_nacks_total', 'Requests carrying error_detail (NACKs), by type URL.');
    // 64 B to 16 MiB, by fours.
    const responseBytes = new CountedHistogram('chancery_xds_response_bytes', 'Size of each DiscoveryResponse written, by type URL.', exponentialBuckets(64, 4, 10), registers);
    this.#responseBytes = perType((typeUrl) => responseBytes.series({ type_url: typeUrl }));
    this.#pregenerations = new Counter({
      name: 'chancery_pregenerations_total',
      help: "Dataplanes' configurations generated ahead of their nodes connecting here (once per write of a dataplane).",
      registers,
    });
    this.#generation = new CountedHistogram(
      'chancery_snapshot_generation_seconds',
      "Time to generate one node's snapshot from the store's projection.",
      [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    ).series();
    this.#refusals = new Counter({
      name: 'chancery_xds_stream_refusals_total',
      help: 'xDS streams refused, or ended, for who they claimed to be, by reason (token-missing, token-expired, wrong-node, …).',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of REFUSAL_REASONS) this.#refusals.inc({ reason }, 0);
    this.#apiDenials = new Counter({
      name: 'chancery_api_denied_total',
      help: 'HTTP API requests refused for their credentials: 401 (no valid token) or 403 (the role may not).',
      labelNames: ['status'],
      registers,
    });
    for (const status of ['401', '403']) this.#apiDenials.inc({ status }, 0);
    // Mesh mTLS (docs/mtls.md): no per-node label; per node, `GET /sessions/{node}` shows each certificate.
    this.#certificatesIssued = new Counter({ name: 'chancery_certificates_issued_total', help: 'Workload certificates issued to nodes, ahead of their sessions or when they asked (renewals included).', registers });
    this.#certificateRenewals = new Counter({ name: 'chancery_certificate_renewals_total', help: 'Workload certificates issued to replace one the node held.', registers });
    new Gauge({
      name: 'chancery_certificate_soonest_expiry_seconds',
      help: 'Seconds until the soonest-expiring workload certificate this instance holds for a node expires (absent: none): alert well before 0.',
      aggregator: 'min',
      registers,
      collect() {
        const soonest = options.soonestCertificateExpiry?.();
        this.reset();
        if (soonest !== undefined) this.set((soonest - now()) / 1000);
      },
    });
    this.#changeFeedLag = new CountedHistogram(
      'chancery_change_feed_lag_seconds',
      "Time from a store event's write to this instance applying it to its projection.",
      [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    ).series();
    this.#rollouts = new CountedHistogram(
      'chancery_write_rollout_seconds',
      'Time from a write to the last node it changed ACKing it, for each write whose rollout this instance found complete (GET /revisions/{R}, apply --wait).',
      [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    ).series();
  }

  /** A write's rollout was found complete: `seconds` from the write to the last affected node's ACK. */
  rolledOut(seconds: number): void {
    this.#rollouts.observe(seconds);
  }

  /** A workload certificate was issued; `renewal` when it replaced one the node held. */
  certificateIssued(renewal: boolean): void {
    this.#certificatesIssued.inc();
    if (renewal) this.#certificateRenewals.inc();
  }

  /** Counts changes of session state; a step within one (`catching-up` to `generating`) is not one. */
  onTransition(_node: string, record: TransitionRecord): void {
    const from = sessionStateOf(record.from);
    const to = sessionStateOf(record.to);
    if (from === to) return;
    let byTo = this.#transitions.get(from);
    if (byTo === undefined) this.#transitions.set(from, (byTo = new Map()));
    byTo.set(to, (byTo.get(to) ?? 0) + 1);
  }

  onRequest(_node: string, kind: RequestKind, typeUrl: TypeUrl): void {
    if (kind === 'ack') this.#acks[typeUrl]++;
    else if (kind === 'nack') this.#nacks[typeUrl]++;
  }

  /** A DiscoveryResponse of `bytes` bytes was written. */
  onResponse(_node: string, { typeUrl }: XdsResponse, bytes: number): void {
    this.#pushes[typeUrl]++;
    this.#pushBytes[typeUrl] += bytes;
    this.#responseBytes[typeUrl].observe(bytes);
  }

  /** An xDS stream was refused (DESIGN §10). */
  refused({ reason }: Refusal): void {
    this.#refusals.inc({ reason });
  }

  /** An API request was refused with 401 or 403. */
  apiDenied(status: 401 | 403): void {
    this.#apiDenials.inc({ status: String(status) });
  }

  /** One snapshot generation took `seconds`. */
  generated(seconds: number): void {
    this.#generation.observe(seconds);
  }

  /** A dataplane's configuration was generated ahead of its node. */
  pregenerated(): void {
    this.#pregenerations.inc();
  }

  /**
   * Observes the change-feed lag of each projection after `from`: the projection the store
   * started with was read at start, and its last event may be days old.
   */
  followChangeFeed(projections: Observable<Projection>, from: number): Subscription {
    return projections.pipe(filter((projection) => projection.revision > from)).subscribe((projection) => {
      if (projection.at === undefined) return;
      // Another instance's clock may be ahead of ours: a negative lag is no lag.
      this.#changeFeedLag.observe(Math.max(0, this.#now() - Date.parse(projection.at)) / 1000);
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric in the Prometheus text format, the process's own included. */
  text(): Promise<string> {
    return this.#all().metrics();
  }

  /** Every metric as prom-client's JSON, the process's own included: what a worker hands its primary to add up. */
  json(): Promise<object[]> {
    return this.#all().getMetricsAsJSON();
  }

  #all(): Registry {
    return Registry.merge([processMetrics(), this.registry]);
  }
}

/**
 * The metrics of several processes (`json()` of each worker of `chancery run --workers`) as one
 * scrape: counters, histograms and session counts added up, the oldest parked request the oldest
 * of all, Node's process metrics as prom-client aggregates them over a cluster.
 */
export function aggregateMetrics(parts: readonly (readonly object[])[]): Promise<string> {
  return AggregatorRegistry.aggregate(parts.map((part) => [...part])).metrics();
}
