/**
 * The base of every error Chancery raises or returns. Each subclass has a literal `code`
 * (`CHANCERY_<AREA>_<WHAT>`, never reused) and the fields needed to act on it.
 */
export abstract class ChanceryError extends Error {
  abstract readonly code: `CHANCERY_${string}`;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
