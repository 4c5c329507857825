import type { SessionView } from '../machines/index.js';
import type { ApiBackend } from './api-backend.js';

/** One subscriber of the feed, such as a browser's event stream. */
export interface FeedClient {
  /** Only this node's full view (transitions included); without it, every session's view without transitions. */
  readonly node?: string;
  /** Takes one server-sent event, already formatted. */
  send(event: string): void;
  end(): void;
}

export interface SessionFeedOptions {
  /** ms between batches: a node that changes ten times in one interval is sent once. */
  readonly interval: number;
  /** Views in one fleet batch; more become a single `resync` event telling clients to refetch. */
  readonly maxBatch: number;
  /**
   * ms before the batch after a `resync`: a fleet busy enough to need one (a change reaching
   * every session) would otherwise have every page refetch at every interval.
   */
  readonly resyncInterval: number;
  /** Calls `flush` after `ms` and returns a cancel; `setTimeout` by default. */
  readonly schedule?: (flush: () => void, ms: number) => () => void;
}

/** Tells a client that it missed changes and should refetch what it shows. */
export const RESYNC_EVENT = 'event: resync\ndata: {}\n\n';

/**
 * Session changes as server-sent events, coalesced per node and sent in batches at most once
 * per interval, so 10,000 sessions changing at once flood neither the browser nor the event
 * loop. Each batch is serialized once for every fleet client. The registry is watched only
 * while someone listens.
 */
export class SessionFeed {
  readonly #sessions: Pick<ApiBackend['sessions'], 'watch' | 'get'>;
  readonly #options: SessionFeedOptions;
  readonly #clients = new Set<FeedClient>();
  /** Nodes changed since the last batch, with the view of the change when it came with one. */
  #pending = new Map<string, SessionView | undefined>();
  #unwatch: (() => void) | undefined;
  #cancel: (() => void) | undefined;
  #delay: number;

  constructor(sessions: Pick<ApiBackend['sessions'], 'watch' | 'get'>, options: SessionFeedOptions) {
    this.#sessions = sessions;
    this.#options = options;
    this.#delay = options.interval;
  }

  /** Adds a client; returns its removal. */
  add(client: FeedClient): () => void {
    this.#clients.add(client);
    this.#unwatch ??= this.#sessions.watch((node, view) => this.#changed(node, view));
    return () => {
      this.#clients.delete(client);
      if (this.#clients.size === 0) this.#stop();
    };
  }

  /** Ends every client's stream: the server is closing, and open streams would keep it from closing. */
  close(): void {
    for (const client of this.#clients) client.end();
    this.#clients.clear();
    this.#stop();
  }

  #changed(node: string, view: SessionView | undefined): void {
    // The last change wins: a view given with it is kept (an evicted session has no other view
    // to read); a change without one (a push, an ACK) means "read the live view when sending".
    this.#pending.set(node, view);
    this.#cancel ??= (this.#options.schedule ?? schedule)(() => this.#flush(), this.#delay);
  }

  #flush(): void {
    this.#cancel = undefined;
    const batch = this.#pending;
    this.#pending = new Map();
    const viewOf = (node: string) => batch.get(node) ?? this.#sessions.get(node);
    let fleet: string | undefined;
    for (const client of this.#clients) {
      if (client.node === undefined) {
        fleet ??= fleetEvent(batch, viewOf, this.#options.maxBatch);
        client.send(fleet);
        continue;
      }
      const view = batch.has(client.node) ? viewOf(client.node) : undefined;
      if (view !== undefined) client.send(`event: session\ndata: ${JSON.stringify(view)}\n\n`);
    }
    this.#delay = fleet === RESYNC_EVENT ? this.#options.resyncInterval : this.#options.interval;
  }

  #stop(): void {
    this.#unwatch?.();
    this.#unwatch = undefined;
    this.#cancel?.();
    this.#cancel = undefined;
    this.#pending.clear();
    this.#delay = this.#options.interval;
  }
}

/** A fleet batch: views without their transitions (the fleet shows none), or a resync when too many changed. */
function fleetEvent(batch: ReadonlyMap<string, unknown>, viewOf: (node: string) => SessionView | undefined, maxBatch: number): string {
  if (batch.size > maxBatch) return RESYNC_EVENT;
  const views = [];
  for (const node of batch.keys()) {
    const view = viewOf(node);
    if (view !== undefined) views.push({ ...view, transitions: undefined });
  }
  return `event: sessions\ndata: ${JSON.stringify({ views })}\n\n`;
}

function schedule(flush: () => void, ms: number): () => void {
  const timer = setTimeout(flush, ms);
  return () => clearTimeout(timer);
}
