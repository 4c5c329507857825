import { stringify } from 'yaml';
import { UsageError } from './errors.js';

export type OutputFormat = 'table' | 'json' | 'yaml';

const FORMATS: readonly OutputFormat[] = ['table', 'json', 'yaml'];

export function outputFormatOf(text: string | undefined): OutputFormat {
  const format = FORMATS.find((candidate) => candidate === (text ?? 'table'));
  if (format === undefined) throw new UsageError(`-o must be one of ${FORMATS.join(', ')}; got "${text}"`);
  return format;
}

/** One value as pretty JSON or a YAML document. */
export function formatDocument(value: unknown, format: 'json' | 'yaml'): string {
  return format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : stringify(value);
}

/**
 * Several values: a JSON array, or YAML documents separated by `---`. Both are what
 * `chancery apply -f` reads, so a listing can be edited and applied back.
 */
export function formatDocuments(values: readonly unknown[], format: 'json' | 'yaml'): string {
  return format === 'json' ? formatDocument(values, 'json') : values.map((value) => stringify(value)).join('---\n');
}
