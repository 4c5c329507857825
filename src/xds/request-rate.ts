/**
 * A stream's request budget (`maxRequestsPerSecond`): a token bucket holding a second's worth,
 * refilled continuously, so a client may burst as many requests as a second allows (Envoy
 * sends CDS, EDS, LDS and RDS requests and their ACKs together on connect) but not sustain more.
 */
export class RequestRate {
  #tokens: number;
  #at: number;

  constructor(
    readonly perSecond: number,
    now: number,
  ) {
    this.#tokens = perSecond;
    this.#at = now;
  }

  /** Spends one request; false when the stream has none left to spend. */
  take(now: number): boolean {
    // A clock stepped back refills nothing rather than draining the bucket.
    const elapsed = Math.max(0, now - this.#at);
    this.#tokens = Math.min(this.perSecond, this.#tokens + (elapsed * this.perSecond) / 1000);
    this.#at = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
