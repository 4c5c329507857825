import { describe, expect, it } from 'vitest';
import { clip, excerpt, storableText, textProblem } from '../../src/common/index.js';

describe('excerpt: a user value as an error message quotes it (issue 11)', () => {
  it('quotes a short string whole, escaping what JSON escapes', () => {
    expect(excerpt('backend-1')).toBe('"backend-1"');
    expect(excerpt('a\u0000b\ud800')).toBe('"a\\u0000b\\ud800"');
  });

  it('cuts a long string and says how long it was', () => {
    expect(excerpt('x'.repeat(100_000))).toBe(`"${'x'.repeat(64)}…" (100000 characters)`);
  });

  it('names structures by their kind, so a cyclic or 100,000-deep value costs nothing', () => {
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i += 1) deep = [deep];
    expect([excerpt(cyclic), excerpt(deep), excerpt({ a: 1 }), excerpt(10n)]).toEqual(['an array', 'an array', 'an object', 'a bigint']);
    expect([excerpt(3), excerpt(true), excerpt(null), excerpt(undefined)]).toEqual(['3', 'true', 'null', 'undefined']);
  });

  it('never cuts a surrogate pair in half', () => {
    expect(clip(`${'a'.repeat(63)}🚀`, 64)).toBe(`${'a'.repeat(63)}…`);
    expect(clip('short', 64)).toBe('short');
  });
});

describe('storable text: what every store keeps exactly', () => {
  it('accepts well-formed text of any script within the length', () => {
    expect(textProblem('eu-west ✓ 🚀 東京 "quoted" \\', 253)).toBeUndefined();
  });

  it.each([
    ['a NUL', 'a\u0000', /U\+0000 is at index 1/],
    ['a tab', '\t', /U\+0009/],
    ['DEL', '\u007f', /U\+007F/],
    ['a lone high surrogate', 'x\ud83d', /lone surrogate U\+D83D is at index 1/],
    ['a lone low surrogate', '\ude80x', /lone surrogate U\+DE80 is at index 0/],
    ['too many characters', 'abcd', /at most 3 characters; it has 4/],
  ])('refuses %s', (_what, text, reason) => {
    expect(textProblem(text, 3)).toMatch(reason);
  });

  it('makes recorded text storable: controls and lone surrogates become U+FFFD, tabs and newlines stay, and it is cut', () => {
    expect(storableText('line 1\n\tline\u0000 2 \ud800 🚀', 100)).toBe('line 1\n\tline\ufffd 2 \ufffd 🚀');
    expect(storableText('abcdef', 3)).toBe('abc');
    expect(textProblem(storableText(`x${'\ud800'.repeat(10)}\u0001`, 100).replace(/\s/g, ''), 100)).toBeUndefined();
  });
});
