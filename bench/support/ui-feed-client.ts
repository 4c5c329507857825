import { get, type ClientRequest, type IncomingMessage } from 'node:http';
import { browserAgent, timedGet } from './ui-http.js';

/** What a page does with the live feed: the paths it fetches when the feed opens and on each kind of event. */
export interface PageBehaviour {
  /** `/sessions/events`, or `/sessions/events?node=…` for a node page. */
  readonly feed: string;
  readonly onOpen: readonly string[];
  /** By event name (`sessions`, `resync`, `session`): the paths fetched again. */
  readonly onEvent: Readonly<Record<string, readonly string[]>>;
}

/** What one client received and fetched since the last `take()`. */
export interface FeedTally {
  /** Server-sent events by name. */
  readonly events: Readonly<Record<string, number>>;
  readonly bytes: number;
  /** Time of each refetch the events caused, ms. */
  readonly refetchMs: readonly number[];
}

/**
 * One browser tab on the web UI, played with node:http: it holds `GET /sessions/events` open
 * and, as the pages do (src/api/ui/fleet-page.js, node-page.js), refetches what it shows when
 * an event says it changed, one load at a time with at most one more owed.
 */
export class PageFeedClient {
  readonly #base: string;
  readonly #behaviour: PageBehaviour;
  readonly #agent = browserAgent();
  #request: ClientRequest | undefined;
  #events: Record<string, number> = {};
  #bytes = 0;
  #refetchMs: number[] = [];
  #loading: Promise<void> | undefined;
  #owed = new Set<string>();
  #failure: string | undefined;
  #closing = false;

  constructor(base: string, behaviour: PageBehaviour) {
    this.#base = base;
    this.#behaviour = behaviour;
  }

  /** Opens the feed; resolves once it is open and the page's first load is done. */
  async open(): Promise<void> {
    const url = `${this.#base}${this.#behaviour.feed}`;
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      this.#request = get(url, { agent: false }, resolve);
      this.#request.on('error', (error) => {
        if (this.#closing) return;
        this.#failure ??= `the feed failed: ${error.message}`;
        reject(new Error(`GET ${url}: ${error.message}`, { cause: error }));
      });
    });
    if (response.statusCode !== 200) throw new Error(`GET ${url} answered ${response.statusCode}`);
    this.#read(response);
    await this.#load(this.#behaviour.onOpen);
    this.take();
  }

  /** Returns what arrived since the last call and starts counting afresh; throws if the feed or a refetch failed. */
  take(): FeedTally {
    if (this.#failure !== undefined) throw new Error(`live-feed client ${this.#behaviour.feed}: ${this.#failure}`);
    const tally = { events: this.#events, bytes: this.#bytes, refetchMs: this.#refetchMs };
    this.#events = {};
    this.#bytes = 0;
    this.#refetchMs = [];
    return tally;
  }

  /** Resolves once no refetch is running or owed. */
  async settled(): Promise<void> {
    while (this.#loading) await this.#loading;
  }

  close(): void {
    this.#closing = true;
    this.#request?.destroy();
    this.#agent.destroy();
  }

  #read(response: IncomingMessage): void {
    let buffered = '';
    response.setEncoding('utf8');
    response.on('data', (text: string) => {
      this.#bytes += Buffer.byteLength(text);
      buffered += text;
      let end: number;
      while ((end = buffered.indexOf('\n\n')) !== -1) {
        this.#received(buffered.slice(0, end));
        buffered = buffered.slice(end + 2);
      }
    });
    response.on('end', () => {
      if (!this.#closing) this.#failure ??= 'the server ended the feed';
    });
  }

  /** One event block: `event: NAME` and `data: …` lines; a block without data (`retry:`) is no event. */
  #received(block: string): void {
    const lines = block.split('\n');
    if (!lines.some((line) => line.startsWith('data:'))) return;
    const name = lines.find((line) => line.startsWith('event:'))?.slice('event:'.length).trim() ?? 'message';
    this.#events[name] = (this.#events[name] ?? 0) + 1;
    const paths = this.#behaviour.onEvent[name];
    if (paths) void this.#load(paths);
  }

  #load(paths: readonly string[]): Promise<void> {
    if (this.#loading) {
      for (const path of paths) this.#owed.add(path);
      return this.#loading;
    }
    this.#loading = this.#fetch(paths).finally(() => {
      this.#loading = undefined;
      if (this.#owed.size === 0) return;
      const owed = [...this.#owed];
      this.#owed.clear();
      void this.#load(owed);
    });
    return this.#loading;
  }

  async #fetch(paths: readonly string[]): Promise<void> {
    try {
      const responses = await Promise.all(paths.map((path) => timedGet(`${this.#base}${path}`, this.#agent)));
      for (const [i, response] of responses.entries()) {
        if (response.status !== 200) this.#failure ??= `GET ${paths[i]} answered ${response.status}`;
        this.#refetchMs.push(response.ms);
      }
    } catch (error) {
      if (!this.#closing) this.#failure ??= error instanceof Error ? error.message : String(error);
    }
  }
}
