import { parseAge } from '../common/index.js';
import { InvalidTokenLifetimeError } from './errors.js';

const HOUR = 3_600_000;

/** How long tokens live unless asked otherwise, and the longest they may. */
export const LIFETIMES = {
  /** A dataplane token: a day, as Kuma's examples; Envoy needs a new bootstrap to take a new one. */
  dataplane: 24 * HOUR,
  /** An API token: a year. */
  api: 365 * 24 * HOUR,
  max: 10 * 365 * 24 * HOUR,
} as const;

/** Checks a ttl in ms, returning the expiry it gives from `now`. */
export function expiryOf(ttl: number, now: number): number {
  if (!Number.isInteger(ttl) || ttl <= 0 || ttl > LIFETIMES.max) throw new InvalidTokenLifetimeError(ttl, LIFETIMES.max);
  return now + ttl;
}

/** A ttl as written (`24h`, `90m`, `30d`), in ms; throws `InvalidTokenLifetimeError` for anything else. */
export function parseTtl(text: unknown): number {
  const ttl = typeof text === 'string' ? parseAge(text) : undefined;
  if (ttl === undefined || ttl <= 0 || ttl > LIFETIMES.max) throw new InvalidTokenLifetimeError(text, LIFETIMES.max);
  return ttl;
}
