/** Texts kept at most, and the longest kept: at most 4,096 × 256 characters, however hostile the requests. */
export const MAX_TEXTS = 4_096;
export const MAX_LENGTH = 256;

/**
 * Equal texts that thousands of requests repeat (type URLs, resource names, versions) returned as
 * one string. Decoding makes a new string for each; during a change the ACKs of 10,000 nodes wait
 * in the scheduler behind the fan-out for up to a second, long enough for the young generation
 * to copy and then promote every one of them (bench/README.md, ninth stop). Kept strongly and
 * bounded: full, it starts over, so texts a client makes up cost at most MAX_TEXTS entries.
 */
export class RepeatedText {
  #texts = new Map<string, string>();

  /** How many texts are kept. */
  get size(): number {
    return this.#texts.size;
  }

  /** `text`, or the equal string returned before. */
  of(text: string): string {
    if (text.length > MAX_LENGTH) return text;
    const kept = this.#texts.get(text);
    if (kept !== undefined) return kept;
    if (this.#texts.size >= MAX_TEXTS) this.#texts = new Map();
    this.#texts.set(text, text);
    return text;
  }

  /** Each of `texts` as `of` returns it. */
  all(texts: readonly string[]): readonly string[] {
    return texts.length === 0 ? texts : texts.map((text) => this.of(text));
  }
}
