import { Composer, type CST, LineCounter, Parser } from 'yaml';
import { clip } from '../common/index.js';
import { MAX_BODY_DEPTH } from './body-shape.js';
import { duplicateKeyError, duplicateYamlKey } from './duplicate-keys.js';
import { MalformedBodyError } from './errors.js';

/** The longest parser message a refusal repeats: some quote the source. */
const MESSAGE_LENGTH = 200;

/**
 * Parses a YAML body of one document. The yaml package composes nodes recursively, and a body
 * nested a few thousand levels deep overflows the stack inside it; two such bodies in a row
 * crashed the process in V8's regexp compiler (issue 11). So the body is first read as a
 * concrete syntax tree, which the package builds iteratively, its depth checked without
 * recursion, and only a body within `MAX_BODY_DEPTH` is composed.
 */
export function parseYaml(source: string): unknown {
  const lines = new LineCounter();
  const tokens = [...new Parser(lines.addNewLine).parse(source)];
  if (nestsDeeperThan(tokens, MAX_BODY_DEPTH)) throw new MalformedBodyError(`the YAML body nests deeper than ${MAX_BODY_DEPTH} levels`);
  // Keys given twice are found below, compared as the parsed object will hold them.
  const documents = [...new Composer({ uniqueKeys: false }).compose(tokens)];
  if (documents.length > 1) throw new MalformedBodyError('invalid YAML: the body holds several documents; send one resource per request');
  const [document] = documents;
  if (document === undefined) return undefined;
  const [error] = document.errors;
  if (error !== undefined) {
    const { line, col } = lines.linePos(error.pos[0]);
    throw new MalformedBodyError(`invalid YAML: ${clip(error.message, MESSAGE_LENGTH)} at line ${line}, column ${col}`, { cause: error });
  }
  const duplicate = duplicateYamlKey(document);
  if (duplicate !== undefined) throw duplicateKeyError('YAML', duplicate);
  try {
    // Aliases resolve to shared values here; what they expand to is measured by checkBodyShape.
    return document.toJS();
  } catch (error) {
    // The package's own guard: "Excessive alias count indicates a resource exhaustion attack".
    throw new MalformedBodyError(`invalid YAML: ${clip((error as Error).message, MESSAGE_LENGTH)}`, { cause: error });
  }
}

function nestsDeeperThan(tokens: readonly CST.Token[], max: number): boolean {
  const pending: Array<readonly [CST.Token, number]> = tokens.map((token) => [token, 0]);
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [token, depth] = next;
    if (token.type === 'document' && token.value !== undefined) pending.push([token.value, depth]);
    if (token.type !== 'block-map' && token.type !== 'block-seq' && token.type !== 'flow-collection') continue;
    if (depth >= max) return true;
    for (const item of token.items) {
      if (item.key) pending.push([item.key, depth + 1]);
      if (item.value) pending.push([item.value, depth + 1]);
    }
  }
  return false;
}
