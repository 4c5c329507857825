import type { Protocol } from '../../src/xds/index.js';
import { AdsStream, DeltaStream, type StreamCredentials } from './ads-client.js';

/** Anything a test closes when it ends: a stream, a client, a connection. */
interface Closable {
  close(): void;
}

/** How a stream proves who it is, and where it goes when not to the usual server. */
export type OpenOptions = StreamCredentials & { readonly address?: string };

/**
 * The streams a test file opens to an xDS server, each on a connection of its own, kept to be
 * closed together when the test (or the file) ends: `closeAll()` goes in the hook that stops
 * the server, before it stops.
 */
export class OpenStreams {
  readonly #opened: Closable[] = [];

  /** `server` is asked at each open where the usual server is: the one of the test running now. */
  constructor(readonly server: () => string = () => { throw new Error('OpenStreams has no usual server: name the address'); }) {}

  /** A SotW stream (StreamAggregatedResources). */
  sotw({ address = this.server(), ...credentials }: OpenOptions = {}): AdsStream {
    return this.track(AdsStream.open(address, credentials));
  }

  /** A Delta stream (DeltaAggregatedResources). */
  delta({ address = this.server(), ...credentials }: OpenOptions = {}): DeltaStream {
    return this.track(DeltaStream.open(address, credentials));
  }

  /** A stream of `protocol`. */
  open(protocol: Protocol, options: OpenOptions = {}): AdsStream | DeltaStream {
    return protocol === 'delta' ? this.delta(options) : this.sotw(options);
  }

  /** Has `closable` (a stream opened another way, a client) closed with the rest; returns it. */
  track<T extends Closable>(closable: T): T {
    this.#opened.push(closable);
    return closable;
  }

  /** Closes everything opened or tracked so far. */
  closeAll(): void {
    for (const closable of this.#opened.splice(0)) closable.close();
  }
}
