/** The second last formatted, and its text up to the milliseconds: views of a fleet show thousands of times within one second. */
let second = Number.NaN;
let secondText = '';

/** The furthest a Date reaches from 1970, either way, in ms (ECMAScript's time range). */
const MAX_TIME = 8.64e15;

/** Epoch ms as the API shows a time: ISO 8601, UTC, as `Date.prototype.toISOString` writes it. */
export function isoTime(at: number): string {
  // Not a time, or past Date's range: toISOString says so (RangeError).
  if (!(Math.abs(at) <= MAX_TIME)) return new Date(at).toISOString();
  // A Date drops a fraction of a millisecond toward zero.
  const ms = Math.trunc(at);
  const start = Math.floor(ms / 1_000) * 1_000;
  if (start !== second) {
    // `YYYY-MM-DDTHH:mm:ss.`, or with a six-digit year outside 0–9999.
    secondText = new Date(start).toISOString().slice(0, -4);
    second = start;
  }
  const milli = ms - start;
  return `${secondText}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}
