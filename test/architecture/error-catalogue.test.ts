import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/api/index.js';

const root = path.resolve(import.meta.dirname, '../..');

/** Every `readonly code = 'CHANCERY_…'` declared under src/, with where. */
function declaredCodes(): Array<{ code: string; file: string }> {
  const files = readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
  return files.flatMap((file) =>
    [...readFileSync(path.join(root, 'src', file), 'utf8').matchAll(/readonly code = '(CHANCERY_[A-Z_]+)'/g)].map((match) => ({
      code: match[1]!,
      file,
    })),
  );
}

const documented = [...readFileSync(path.join(root, 'docs/errors.md'), 'utf8').matchAll(/^\| `(CHANCERY_[A-Z_]+)` \| ([^|]+) \|/gm)].map(
  (match) => ({ code: match[1]!, surfaces: match[2]!.trim() }),
);

describe('the error catalogue (docs/errors.md)', () => {
  it('never uses one code twice', () => {
    const codes = declaredCodes().map(({ code }) => code);
    expect(codes.length).toBeGreaterThan(20);
    expect(codes.filter((code, i) => codes.indexOf(code) !== i)).toEqual([]);
  });

  it('documents every code, with where it surfaces, and nothing that no longer exists', () => {
    const declared = new Set(declaredCodes().map(({ code }) => code));
    expect([...declared].filter((code) => !documented.some((row) => row.code === code))).toEqual([]);
    expect(documented.filter((row) => !declared.has(row.code)).map((row) => row.code)).toEqual([]);
    for (const row of documented) expect(row.surfaces, row.code).not.toBe('');
  });

  it('gives every code the HTTP API answers with the status the catalogue says', () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      const row = documented.find((entry) => entry.code === code);
      expect(row?.surfaces, code).toContain(`HTTP ${status}`);
    }
  });
});
