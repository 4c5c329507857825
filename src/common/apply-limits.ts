/**
 * How much one `POST /apply` takes (the server refuses more) and so how `chancery apply` cuts
 * a larger file into batches: shared by both, without loading either.
 */
export const APPLY_LIMITS = {
  /** Resources in one apply: a file of up to this many is applied all or nothing. */
  items: 10_000,
  /** Bytes of one apply's body: 10,000 Dataplanes of a few inbounds and outbounds fit in a third of it. */
  bodyBytes: 16 * 1024 * 1024,
} as const;
