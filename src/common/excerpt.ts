/** The most characters of a user's value that an error message quotes. */
export const EXCERPT_LENGTH = 64;

/**
 * A user's value as an error message may quote it: a string JSON-quoted and cut to `max`
 * characters, a number, boolean or null as written, anything else by its kind. It never
 * serialises a structure: a value from a request may be cyclic (a YAML alias loop) or nested
 * thousands deep, and a refusal must cost nothing to build and stay short enough to deliver
 * (issue 11: a 100 KB node id repeated in a gRPC status never reached the client).
 */
export function excerpt(value: unknown, max = EXCERPT_LENGTH): string {
  if (typeof value === 'string') return quote(value, max);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** `text` cut to `max` characters, marked with `…` when cut: for messages that embed request text. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  // Never half a surrogate pair: the cut text must stay well-formed UTF-16.
  const end = isHighSurrogate(text.charCodeAt(max - 1)) ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

function quote(text: string, max: number): string {
  if (text.length <= max) return JSON.stringify(text);
  return `${JSON.stringify(clip(text, max))} (${text.length} characters)`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
