import type { TextSink } from './cli-io.js';

/** Files with fewer resources are answered before a progress line would be read. */
const PROGRESS_FROM = 500;
const REDRAW_MS = 250;

/**
 * The line `chancery apply` keeps redrawn on a terminal while a large file is applied: how
 * many resources the server has answered, of how many, and for how long it has been waiting.
 * Nothing is drawn elsewhere (a pipe, a file, a CI log) or for a small file.
 */
export class ApplyProgress {
  readonly #sink: TextSink;
  readonly #total: number;
  readonly #shown: boolean;
  readonly #started = performance.now();
  #answered = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(sink: TextSink, total: number) {
    this.#sink = sink;
    this.#total = total;
    this.#shown = sink.isTTY === true && total >= PROGRESS_FROM;
    if (!this.#shown) return;
    this.#draw();
    this.#timer = setInterval(() => this.#draw(), REDRAW_MS);
  }

  /** `count` more resources were answered. */
  answered(count: number): void {
    this.#answered += count;
    if (this.#shown) this.#draw();
  }

  /** Removes the line, before anything else is printed or when the apply is over. */
  clear(): void {
    if (!this.#shown) return;
    clearInterval(this.#timer);
    this.#sink.write('\r\u001b[K');
  }

  #draw(): void {
    const seconds = ((performance.now() - this.#started) / 1000).toFixed(1);
    this.#sink.write(`\r\u001b[Kapplying: ${this.#answered} of ${this.#total} resources answered, ${seconds} s`);
  }
}
