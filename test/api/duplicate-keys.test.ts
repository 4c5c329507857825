import { parseDocument } from 'yaml';
import { describe, expect, it } from 'vitest';
import { duplicateJsonKey, duplicateYamlKey } from '../../src/api/duplicate-keys.js';

describe('a key given twice in one JSON object', () => {
  it.each([
    ['{"a": 1, "a": 2}', 'a'],
    ['{"a": {"b": 1, "c": 2, "b": 3}}', 'a.b'],
    ['{"a": [{"b": 1}, {"b": 1, "b": 2}]}', 'a[1].b'],
    ['[[], [{"x": 0}], {"k": [1, {"k": 2}], "k": 3}]', '[2].k'],
    ['{"a": 1, "\\u0061": 2}', 'a'],
    ['{"kuma.io/zone": 1, "kuma.io/zone": 2}', '["kuma.io/zone"]'],
    ['{"a": "\\"}{,\\\\", "a": 2}', 'a'],
    ['{"": 1, "": 2}', '[""]'],
  ])('is found in %s at %s', (source, path) => {
    expect(duplicateJsonKey(source)).toBe(path);
  });

  it.each([
    '{"a": 1, "b": {"a": 2}}',
    '[{"a": 1}, {"a": 2}]',
    '{"a": "\\"a\\": 1, \\"a\\": 2"}',
    '{"a": {}, "b": [], "c": [[{}]]}',
    '"a"',
    '{"A": 1, "a": 2}',
  ])('is not found in %s, which gives none twice', (source) => {
    expect(duplicateJsonKey(source)).toBeUndefined();
  });
});

describe('a key given twice in one YAML mapping', () => {
  it.each([
    ['a: 1\na: 2\n', 'a'],
    ['a:\n  - b: 1\n  - b: 1\n    b: 2\n', 'a[1].b'],
    // Distinct YAML keys, one property of the parsed object.
    ['tags: {1: a, "1": b}\n', 'tags["1"]'],
    ['{true: 1, "true": 2}', 'true'],
  ])('is found in %j at %s', (source, path) => {
    expect(duplicateYamlKey(parseDocument(source, { uniqueKeys: false }))).toBe(path);
  });

  it('is not found when the same key is in two mappings', () => {
    expect(duplicateYamlKey(parseDocument('a: {b: 1}\nc: {b: 2}\nd: [{b: 1}, {b: 2}]\n'))).toBeUndefined();
  });
});
