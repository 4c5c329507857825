/**
 * Which text every store keeps exactly (issue 11). Postgres and PGlite store resources as
 * JSONB, which refuses U+0000 and lone UTF-16 surrogates; the memory store keeps anything.
 * Validation refuses, on every store alike, text that one of them could not keep, and the
 * control characters no name or tag needs, so that the three accept exactly the same writes.
 */

// C0 controls with U+0000, DEL and the C1 controls; then a surrogate without its partner.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `text` is not storable text of at most `maxLength` characters, or undefined if it is. */
export function textProblem(text: string, maxLength: number): string | undefined {
  if (text.length > maxLength) return `must be at most ${maxLength} characters; it has ${text.length}`;
  const control = CONTROL.exec(text);
  if (control) return `must not contain control characters; ${codePoint(control[0])} is at index ${control.index}`;
  const lone = LONE_SURROGATE.exec(text);
  if (lone) return `must be well-formed Unicode; a lone surrogate ${codePoint(lone[0])} is at index ${lone.index}`;
  return undefined;
}

/**
 * `text` made storable for text the server only records, never matches (a dataplane's NACK
 * message): control characters other than tab and newline, and lone surrogates, become U+FFFD,
 * and it is cut to `maxLength` characters.
 */
export function storableText(text: string, maxLength: number): string {
  const cut = text.length > maxLength ? text.slice(0, maxLength) : text;
  return cut.replace(RECORDED_CONTROL, '\ufffd').replace(LONE_SURROGATE_ALL, '\ufffd');
}

const RECORDED_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
const LONE_SURROGATE_ALL = new RegExp(LONE_SURROGATE.source, 'g');

function codePoint(char: string): string {
  return `U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
}
