import type { ChangeDesk, Rollouts } from '../changes/index.js';
import type { SessionView } from '../machines/index.js';
import type { SessionPage, SessionSummary, SessionViews, SessionWatch } from '../sessions/index.js';
import type { FleetSession } from '../fleet/index.js';
import type { RefusalSummary } from '../identity/index.js';
import type { Admission } from '../xds/index.js';
import type { InstanceRecord, ResourceStore } from '../store/index.js';

/** What the HTTP API needs of a running control plane; `createControlPlane` provides it. */
export interface ApiBackend {
  readonly instanceId: string;
  readonly store: ResourceStore;
  /** Where writes are previewed, checked for warnings and made (issue 31). */
  readonly changes: ChangeDesk;
  /** How writes land across the fleet (`GET /revisions/{R}`). */
  readonly rollouts: Rollouts;
  readonly sessions: {
    list(): readonly SessionView[];
    get(node: string): SessionView | undefined;
    /** Node, state and instance of every session, without building views. */
    summaries(): readonly SessionSummary[];
    /** Every session in node order from `offset`, at most `limit`, with the counts of all of them: no filter, no scan. */
    inOrder(offset: number, limit: number | undefined): SessionPage;
    /** Whether the node's last response of some type was NACKed. */
    nacking(node: string): boolean;
    /**
     * Calls `listener` whenever a session changes: with its view when it changed state or
     * recorded a NACK, with its node alone when only its status did (a push, an ACK), for the
     * listener to read the view when it needs it. Returns the unsubscribe.
     */
    watch(listener: (node: string, view?: SessionView) => void): () => void;
    /**
     * What was last sent to the node on its current stream, per short type name (CDS, EDS,
     * LDS, RDS), resources decoded to JSON; undefined when the node has no session.
     */
    lastSent(node: string): Readonly<Record<string, { version: string; nonce: string; resources: readonly unknown[] }>> | undefined;
  };
  /** The rest of the fleet sharing the store (issue 4): the other live instances' sessions, and every instance. */
  readonly fleet: {
    /** The other live instances' sessions as they last saved them, sorted by node then instance; one node's with `node`. */
    others(node?: string): Promise<readonly FleetSession[]>;
    instances(): Promise<readonly InstanceRecord[]>;
  };
  /** ms a disconnected session waits for its node: the chart's eviction delay (`GET /statechart`); default 10 s. */
  readonly evictionGrace?: number;
  /** This instance's bound xDS address (`host:port`): where a generated bootstrap dials unless told otherwise. */
  xdsAddress(): string;
  /** Ready once the store is caught up (`/readyz`). */
  ready(): boolean;
  /** Prometheus text for `GET /metrics`; without it the route is not served. */
  readonly metrics?: MetricsSource;
  /** Epoch ms: when issued tokens start and expire. */
  now(): number;
  /** The xDS streams this instance refused (`GET /sessions` shows them). */
  refusals(): RefusalSummary;
  /** Dataplanes calling the API as themselves (`chancery agent`): admitted as on the xDS port, and counted. Without it the certificate route is not served. */
  readonly dataplanes?: {
    admit(node: string, authorization: string | undefined): Admission | Promise<Admission>;
    /** A certificate was signed for a dataplane's own key. */
    certificateIssued(): void;
  };
}

/** What `GET /metrics` serves: `ControlPlaneMetrics` implements it. */
export interface MetricsSource {
  /** The Prometheus text format's content type, with its version. */
  readonly contentType: string;
  text(): Promise<string>;
}

/** The API's read side of this instance's sessions: what `createControlPlane` (and test planes) serve. */
export function sessionsOf(views: SessionViews, watch: SessionWatch): ApiBackend['sessions'] {
  return {
    list: () => views.list(),
    get: (node) => views.get(node),
    summaries: () => views.summaries(),
    inOrder: (offset, limit) => views.inOrder(offset, limit),
    nacking: (node) => views.nacking(node),
    watch: (listener) => watch.watch(listener),
    lastSent: (node) => views.lastSent(node),
  };
}
