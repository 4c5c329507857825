import { type Document, isMap, isScalar, isSeq } from 'yaml';
import { fieldPath } from '../common/index.js';
import { MalformedBodyError } from './errors.js';

/**
 * An object or an array being read. An object keeps the keys it has given so far (`keys`), its
 * last one, and whether a key comes next; an array the index of the item being read. One shape
 * for both keeps the scan's property reads monomorphic.
 */
interface Frame {
  readonly keys: Set<string> | undefined;
  key: string;
  expectsKey: boolean;
  index: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The path of the first key a JSON text gives twice in one object (`networking`,
 * `networking.inbound[0].port`), or undefined. `JSON.parse` keeps the last silently, so a
 * second `networking` would drop the first one's inbounds without a word; YAML refuses the same.
 * `source` must be JSON that `JSON.parse` accepted: the scan trusts its structure, and reads
 * each character once, in about the time `JSON.parse` takes over the same text (a few µs for a
 * Dataplane, measured by hand on this machine).
 */
export function duplicateJsonKey(source: string): string | undefined {
  const stack: Frame[] = [];
  let top: Frame | undefined;
  for (let i = 0; i < source.length; i++) {
    const code = source.charCodeAt(i);
    if (code === QUOTE) {
      const end = stringEnd(source, i);
      if (top?.keys !== undefined && top.expectsKey) {
        const raw = source.slice(i + 1, end);
        // "a" and "\u0061" are the same key.
        const key = raw.includes('\\') ? (JSON.parse(source.slice(i, end + 1)) as string) : raw;
        if (top.keys.has(key)) return pathTo(stack, key);
        top.keys.add(key);
        top.key = key;
        top.expectsKey = false;
      }
      i = end;
    } else if (code === 0x7b /* { */ || code === 0x5b /* [ */) {
      top = { keys: code === 0x7b ? new Set() : undefined, key: '', expectsKey: true, index: 0 };
      stack.push(top);
    } else if (code === 0x7d /* } */ || code === 0x5d /* ] */) {
      stack.pop();
      top = stack.at(-1);
    } else if (code === 0x2c /* , */ && top !== undefined) {
      top.expectsKey = true;
      top.index++;
    }
  }
  return undefined;
}

/** The index of the quote that ends the string starting at `start`: the next one no odd run of backslashes escapes. */
function stringEnd(source: string, start: number): number {
  let quote = source.indexOf('"', start + 1);
  while (quote !== -1 && escaped(source, quote)) quote = source.indexOf('"', quote + 1);
  // Never for JSON that JSON.parse accepted; an unclosed string ends the scan rather than restart it.
  return quote === -1 ? source.length : quote;
}

function escaped(source: string, quote: number): boolean {
  let backslashes = 0;
  for (let i = quote - 1; source.charCodeAt(i) === BACKSLASH; i--) backslashes++;
  return backslashes % 2 === 1;
}

function pathTo(stack: readonly Frame[], key: string): string {
  let path = '';
  for (const frame of stack.slice(0, -1)) path = frame.keys === undefined ? `${path}[${frame.index}]` : fieldPath(path, frame.key);
  return fieldPath(path, key);
}

/**
 * The path of a key a YAML document gives twice in one mapping, or undefined. Keys are compared
 * as the body's object will hold them, as strings: `1:` and `"1":` are distinct YAML keys, but
 * one property. The document nests at most `MAX_BODY_DEPTH` levels (yaml-body.ts), and aliases
 * are not followed: what they refer to is walked where it is written.
 */
export function duplicateYamlKey(document: Document): string | undefined {
  const pending: Array<readonly [unknown, string]> = [[document.contents, '']];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [node, path] = next;
    if (isMap(node)) {
      const keys = new Set<string>();
      for (const { key, value } of node.items) {
        const text = isScalar(key) ? String(key.value) : String(key);
        if (keys.has(text)) return fieldPath(path, text);
        keys.add(text);
        pending.push([value, fieldPath(path, text)]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, index) => pending.push([item, `${path}[${index}]`]));
    }
  }
  return undefined;
}
/** A body that gives `field` twice in one object: the second would silently replace the first. */
export function duplicateKeyError(format: 'JSON' | 'YAML', field: string): MalformedBodyError {
  return new MalformedBodyError(`invalid ${format}: ${field} is given twice in one object; the second would silently replace the first`, { field });
}
