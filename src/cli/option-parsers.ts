/**
 * Parsers for `chancery run` option values. Each returns the value or throws an Error whose
 * message says what is expected; the config table adds which flag or variable it came from.
 */

import { HOST_PORT_RULE, parseAge, parseHostPort } from '../common/index.js';
import { parseStoreSpec, type Retention } from '../store/index.js';

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/** `500ms`, `1s`, `2m`, `1h`, or plain milliseconds (`1500`), to milliseconds. */
export function parseDuration(text: string): number {
  const match = DURATION.exec(text.trim());
  if (match?.[1] === undefined) throw new Error(`expected a duration such as 500ms, 1s, 2m or plain milliseconds; got "${text}"`);
  const unit = (match[2] ?? 'ms') as keyof typeof UNIT_MS;
  return Math.round(Number(match[1]) * UNIT_MS[unit]);
}

export function parsePositiveDuration(text: string): number {
  const ms = parseDuration(text);
  if (ms <= 0) throw new Error(`must be longer than 0; got "${text}"`);
  return ms;
}

/** `off`, or a duration longer than 0 (`30m`). */
export function parseOptionalDuration(text: string): number | 'off' {
  return text.trim() === 'off' ? 'off' : parsePositiveDuration(text);
}

const COUNT = /^[1-9]\d{0,14}$/;

/** A whole number of at least 1 (`100`). */
export function parseCount(text: string): number {
  if (!COUNT.test(text.trim())) throw new Error(`expected a whole number of at least 1; got "${text}"`);
  return Number(text.trim());
}

const BYTE_SIZE = /^([1-9]\d{0,14})(B|KiB|MiB)?$/;
const UNIT_BYTES = { B: 1, KiB: 1_024, MiB: 1_048_576 } as const;

/** A size of at least 1 byte: `65536`, `64KiB`, `4MiB`. */
export function parseByteSize(text: string): number {
  const match = BYTE_SIZE.exec(text.trim());
  if (match?.[1] === undefined) throw new Error(`expected a size such as 65536, 64KiB or 4MiB; got "${text}"`);
  return Number(match[1]) * UNIT_BYTES[(match[2] ?? 'B') as keyof typeof UNIT_BYTES];
}

/** `host:port` (`[::1]:5681` for IPv6); port 0 lets the OS choose. Returned as given. */
export function parseAddress(text: string): string {
  if (parseHostPort(text) === undefined) throw new Error(`expected ${HOST_PORT_RULE}; got "${text}"`);
  return text;
}

/** `memory`, `pglite:<dir>` or a `postgres://` URL; whether it can be opened is the control plane's call. */
export function parseStore(text: string): string {
  parseStoreSpec(text);
  return text;
}

/** Whether a store spec keeps nothing once its process ends: `memory`, `pglite:` and `pglite:memory`. */
export function keepsNothing(spec: string): boolean {
  const parsed = parseStoreSpec(spec);
  return parsed.kind === 'memory' || (parsed.kind === 'pglite' && parsed.dir === undefined);
}

const INSTANCE_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function parseInstanceId(text: string): string {
  if (!INSTANCE_ID.test(text)) throw new Error(`expected letters, digits, ".", "_", ":" or "-" (at most 128); got "${text}"`);
  return text;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function parseLogLevel(text: string): LogLevel {
  const level = LOG_LEVELS.find((candidate) => candidate === text);
  if (level === undefined) throw new Error(`expected one of ${LOG_LEVELS.join(', ')}; got "${text}"`);
  return level;
}

export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export function parseLogFormat(text: string): LogFormat {
  const format = LOG_FORMATS.find((candidate) => candidate === text);
  if (format === undefined) throw new Error(`expected one of ${LOG_FORMATS.join(', ')}; got "${text}"`);
  return format;
}

/**
 * How much event history to keep: `off` (every event), a number of events (`100000`, the
 * newest ones), or an age with its unit (`30d`, `12h`, `90m`, `45s`).
 */
export function parseRetention(text: string): Retention | 'off' {
  const trimmed = text.trim();
  if (trimmed === 'off') return 'off';
  if (/^\d{1,15}$/.test(trimmed)) {
    const events = Number(trimmed);
    if (events < 1) throw new Error(`must keep at least 1 event; got "${text}"`);
    return { events };
  }
  const maxAge = parseAge(trimmed);
  if (maxAge !== undefined && maxAge > 0) return { maxAge };
  throw new Error(`expected off, a number of events such as 100000, or an age such as 30d, 12h or 90m; got "${text}"`);
}

/** A file path (whether it can be read is the control plane's call, which names the file). */
export function parseFile(text: string): string {
  if (text.trim() === '') throw new Error('expected a file');
  return text;
}

export function parseApiAuth(text: string): 'none' | 'token' {
  if (text !== 'none' && text !== 'token') throw new Error(`expected none or token; got "${text}"`);
  return text;
}

export function parseOnOff(text: string): boolean {
  if (text !== 'on' && text !== 'off') throw new Error(`expected on or off; got "${text}"`);
  return text === 'on';
}
