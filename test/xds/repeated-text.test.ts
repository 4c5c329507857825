import { describe, expect, it } from 'vitest';
import { decodeRequest, encodeRequest } from '../../src/xds/index.js';
import { MAX_LENGTH, MAX_TEXTS, RepeatedText } from '../../src/xds/repeated-text.js';
import { ENDPOINT } from '../../src/xds/type-urls.js';

describe('RepeatedText', () => {
  it('returns every text as it was given, and keeps each one once', () => {
    const texts = new RepeatedText();
    expect(texts.of('svc-01')).toBe('svc-01');
    expect(texts.of(`svc-${'01'}`)).toBe('svc-01');
    expect(texts.all(['svc-01', 'svc-02', 'svc-01'])).toEqual(['svc-01', 'svc-02', 'svc-01']);
    expect(texts.size).toBe(2);
  });

  it('keeps no more than its bound, however many texts a client makes up, and still answers', () => {
    const texts = new RepeatedText();
    for (let index = 0; index < 3 * MAX_TEXTS; index++) {
      expect(texts.of(`made-up-${index}`)).toBe(`made-up-${index}`);
      expect(texts.size).toBeLessThanOrEqual(MAX_TEXTS);
    }
    const long = 'x'.repeat(MAX_LENGTH + 1);
    const before = texts.size;
    expect(texts.of(long)).toBe(long);
    expect(texts.size).toBe(before);
  });

  it('leaves an empty list as it is', () => {
    const none: readonly string[] = [];
    expect(new RepeatedText().all(none)).toBe(none);
  });
});

describe('decoded requests', () => {
  it('carry the type URL, version and names they were sent with, request after request', () => {
    const names = ['svc-00', 'svc-01', 'svc-02'];
    for (let index = 0; index < 3; index++) {
      const decoded = decodeRequest(encodeRequest({ typeUrl: ENDPOINT, versionInfo: `v${index}`, resourceNames: names, responseNonce: `n${index}` }));
      expect(decoded).toMatchObject({ ok: true, request: { protocol: 'sotw', typeUrl: ENDPOINT, versionInfo: `v${index}`, resourceNames: names, responseNonce: `n${index}` } });
    }
  });
});
