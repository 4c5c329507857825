/**
 * Streams open on each client connection (`maxStreamsPerConnection`), by peer address: one
 * HTTP/2 connection per `host:port`. HTTP/2's own SETTINGS_MAX_CONCURRENT_STREAMS would make a
 * client queue its extra streams silently; counting here lets the server refuse one with a status.
 */
export class ConnectionStreams {
  readonly #open = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Connections with a stream open: for tests and diagnostics (I3). */
  get size(): number {
    return this.#open.size;
  }

  /** Counts a stream opened on `peer`'s connection; false, and not counted, when it has `max` already. */
  open(peer: string): boolean {
    const open = this.#open.get(peer) ?? 0;
    if (open >= this.max) return false;
    this.#open.set(peer, open + 1);
    return true;
  }

  /** A stream that `open` counted has closed. */
  close(peer: string): void {
    const open = (this.#open.get(peer) ?? 1) - 1;
    if (open === 0) this.#open.delete(peer);
    else this.#open.set(peer, open);
  }
}
