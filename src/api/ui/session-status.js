// How a session's state and per-type status read on the pages.

/** xDS types in push order (CDS, EDS, LDS, RDS). */
export const TYPES = ['CDS', 'EDS', 'LDS', 'RDS'];

/** Where a type's last response stands: the latest nonce sent decides (as `chancery inspect` shows it). */
export function outcomeOf(status) {
  const sent = status?.sent;
  if (sent === undefined) return '-';
  if (status.nacked?.nonce === sent.nonce) return 'NACK';
  if (status.acked?.nonce === sent.nonce) return 'ACK';
  return 'sent';
}

const TIME = new Intl.DateTimeFormat(undefined, {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  fractionalSecondDigits: 3,
  hour12: false,
});

/** A local time of day to the millisecond; the full ISO time is the element's `datetime`. */
export function timeOf(iso) {
  return TIME.format(new Date(iso));
}

/**
 * How long before `now` an ISO time was, as in `saved 2 s ago`; a time ahead of the browser's
 * clock (it is the store's) reads as just now.
 */
export function ago(iso, now = Date.now()) {
  const seconds = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000));
  if (seconds < 1) return 'just now';
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}

const NUMBER = new Intl.NumberFormat();

export function count(n) {
  return NUMBER.format(n);
}
