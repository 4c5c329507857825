/**
 * Small pure helpers every folder shares: the error base, text (excerpts, storable text, field
 * paths, ordering), a queue, memos, time (ISO stamps, spans), host:port, and the limits both the API and the CLI
 * read. Nothing here imports another folder of src.
 */
export { APPLY_LIMITS } from './apply-limits.js';
export { ChanceryError } from './chancery-error.js';
export { compareText } from './compare-text.js';
export { parseAge } from './durations.js';
export { clip, excerpt, EXCERPT_LENGTH } from './excerpt.js';
export { fieldPath } from './field-path.js';
export { Fifo } from './fifo.js';
export { bareHost, dialable, formatHostPort, HOST_PORT_RULE, isLoopback, parseHostPort, type HostPort } from './host-port.js';
export { isoTime } from './iso-time.js';
export { memoised, memoisedOn, memoisedPair, type PairMemo } from './memo.js';
export { sortedIndex } from './sorted-index.js';
export { storableText, textProblem } from './storable-text.js';
