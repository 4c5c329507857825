export type { CliIo, TextSink } from './cli-io.js';
export { controlPlaneOptionsOf, type OptionSpec, resolveOptions, RUN_OPTIONS, type RunConfig } from './config.js';
export * from './errors.js';
export { main } from './main.js';
export { parseDuration } from './option-parsers.js';
