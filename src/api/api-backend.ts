import type { SessionRegistry, SessionSummary } from '../machines/session-registry.js';
import type { FleetSession } from '../fleet/fleet-sessions.js';
import type { SessionView } from '../machines/session-view.js';
import type { InstanceRecord } from '../store/session-records.js';
import type { ResourceStore } from '../store/types.js';

/** What the HTTP API needs of a running control plane; `createControlPlane` provides it. */
export interface ApiBackend {
  readonly instanceId: string;
  readonly store: ResourceStore;
  readonly sessions: {
    list(): readonly SessionView[];
    get(node: string): SessionView | undefined;
    /** Node, state and instance of every session, without building views. */
    summaries(): readonly SessionSummary[];
    /** Whether the node's last response of some type was NACKed. */
    nacking(node: string): boolean;
    /** Calls `listener` with a session's view whenever it changes state or records a NACK; returns the unsubscribe. */
    watch(listener: (view: SessionView) => void): () => void;
    /**
     * What was last sent to the node on its current stream, per short type name (CDS, EDS,
     * LDS, RDS), resources decoded to JSON; undefined when the node has no session.
     */
    lastSent(node: string): Readonly<Record<string, { version: string; nonce: string; resources: readonly unknown[] }>> | undefined;
  };
  /** The whole fleet sharing the store (issue 4): every live instance's sessions, and the instances. */
  readonly fleet: {
    /** Sorted by node then instance; one node's with `node`. */
    sessions(node?: string): Promise<readonly FleetSession[]>;
    instances(): Promise<readonly InstanceRecord[]>;
  };
  /** Ready once the store is caught up (`/readyz`). */
  ready(): boolean;
  /** Prometheus text for `GET /metrics`; without it the route is not served. */
  readonly metrics?: MetricsSource;
}

/** What `GET /metrics` serves: `ControlPlaneMetrics` implements it. */
export interface MetricsSource {
  /** The Prometheus text format's content type, with its version. */
  readonly contentType: string;
  text(): Promise<string>;
}

/** The API's read side of a session registry: what `createControlPlane` (and test planes) serve. */
export function registrySessions(registry: SessionRegistry): ApiBackend['sessions'] {
  return {
    list: () => registry.list(),
    get: (node) => registry.get(node),
    summaries: () => registry.summaries(),
    nacking: (node) => registry.nacking(node),
    watch: (listener) => {
      const subscription = registry.views.subscribe(listener);
      return () => subscription.unsubscribe();
    },
    lastSent: (node) => registry.lastSent(node),
  };
}
