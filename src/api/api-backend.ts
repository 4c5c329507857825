import type { SessionView } from '../machines/session-view.js';
import type { ResourceStore } from '../store/types.js';

/** What the HTTP API needs of a running control plane; `createControlPlane` provides it. */
export interface ApiBackend {
  readonly instanceId: string;
  readonly store: ResourceStore;
  readonly sessions: {
    list(): readonly SessionView[];
    get(node: string): SessionView | undefined;
    /**
     * What was last sent to the node on its current stream, per short type name (CDS, EDS,
     * LDS, RDS), resources decoded to JSON; undefined when the node has no session.
     */
    lastSent(node: string): Readonly<Record<string, { version: string; nonce: string; resources: readonly unknown[] }>> | undefined;
  };
  /** Ready once the store is caught up (`/readyz`). */
  ready(): boolean;
}
