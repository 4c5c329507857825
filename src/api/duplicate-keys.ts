import { type Document, isMap, isScalar, isSeq } from 'yaml';
import { fieldPath } from '../field-path.js';
import { MalformedBodyError } from './errors.js';

/** An object being read: the keys it has given so far, the last one, and whether a key comes next. */
interface ObjectFrame {
  readonly keys: Set<string>;
  key: string;
  expectsKey: boolean;
}

/** An array being read, and the index of the item being read. */
interface ArrayFrame {
  index: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The path of the first key a JSON text gives twice in one object (`networking`,
 * `networking.inbound[0].port`), or undefined. `JSON.parse` keeps the last silently, so a
 * second `networking` would drop the first one's inbounds without a word; YAML refuses the same.
 * `source` must be JSON that `JSON.parse` accepted: the scan trusts its structure, and reads
 * each character once.
 */
export function duplicateJsonKey(source: string): string | undefined {
  const stack: Array<ObjectFrame | ArrayFrame> = [];
  for (let i = 0; i < source.length; i++) {
    const code = source.charCodeAt(i);
    if (code === QUOTE) {
      const end = stringEnd(source, i);
      const top = stack.at(-1);
      if (top !== undefined && 'keys' in top && top.expectsKey) {
        const raw = source.slice(i + 1, end);
        // "a" and "\u0061" are the same key.
        const key = raw.includes('\\') ? (JSON.parse(source.slice(i, end + 1)) as string) : raw;
        if (top.keys.has(key)) return pathTo(stack, key);
        top.keys.add(key);
        top.key = key;
        top.expectsKey = false;
      }
      i = end;
    } else if (code === 0x7b /* { */) stack.push({ keys: new Set(), key: '', expectsKey: true });
    else if (code === 0x5b /* [ */) stack.push({ index: 0 });
    else if (code === 0x7d /* } */ || code === 0x5d /* ] */) stack.pop();
    else if (code === 0x2c /* , */) {
      const top = stack.at(-1);
      if (top !== undefined && 'keys' in top) top.expectsKey = true;
      else if (top !== undefined) top.index++;
    }
  }
  return undefined;
}

/** The index of the quote that ends the string starting at `start`. */
function stringEnd(source: string, start: number): number {
  let i = start + 1;
  for (let code = source.charCodeAt(i); code !== QUOTE; code = source.charCodeAt(i)) i += code === BACKSLASH ? 2 : 1;
  return i;
}

function pathTo(stack: ReadonlyArray<ObjectFrame | ArrayFrame>, key: string): string {
  let path = '';
  for (const frame of stack.slice(0, -1)) path = 'keys' in frame ? fieldPath(path, frame.key) : `${path}[${frame.index}]`;
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
