/**
 * Durations as Kuma policies write them: Go's `time.ParseDuration` format without a sign, one or
 * more decimal numbers each with a unit (`1s`, `500ms`, `1.5h`, `1h30m`, `0s`).
 */

const UNIT_MS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const WHOLE = /^(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h)(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))*$/;
const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g;

/** The longest duration a protobuf Duration holds (10,000 years), in ms. */
export const MAX_DURATION_MS = 315_576_000_000_000;

export const DURATION_RULE = 'must be a duration such as 500ms, 1s, 20m or 1h30m';

/** The duration in milliseconds, or undefined when `text` is not one. */
export function parseDuration(text: string): number | undefined {
  if (text.length > 64 || !WHOLE.test(text)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(PART)) ms += Number(amount) * UNIT_MS[unit!]!;
  return ms;
}

/**
 * A duration as Envoy's protobuf `Duration`; `text` has passed validation. A zero part is left
 * out: protobufjs would encode it, and `1s` must be the same bytes however it is reached.
 */
export function protoDuration(text: string): { readonly seconds?: number; readonly nanos?: number } {
  const ms = parseDuration(text) ?? 0;
  const seconds = Math.floor(ms / 1_000);
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1_000) * 1e6));
  return { ...(seconds > 0 && { seconds }), ...(nanos > 0 && { nanos }) };
}
