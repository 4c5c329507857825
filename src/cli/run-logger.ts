import { pino, type Logger } from 'pino';
import type { TextSink } from './cli-io.js';
import type { LogFormat, LogLevel } from './option-parsers.js';

/**
 * The logger of `chancery run`: JSON lines (one object a line, for a log collector) or, on a
 * terminal, lines for a person: a local time, a coloured level, the message and its fields on
 * one line. `format` undefined chooses by `stdout`: pretty on a terminal, JSON otherwise.
 */
export async function runLogger(level: LogLevel, format: LogFormat | undefined, stdout: TextSink): Promise<Logger> {
  const pretty = (format ?? (stdout.isTTY === true ? 'pretty' : 'json')) === 'pretty';
  if (!pretty) return pino({ level }, stdout);
  // Loaded only when asked for: JSON needs none of it. Formatted in this thread, line by line,
  // rather than in pino's transport worker: a terminal's few lines a second need no thread.
  const { prettyFactory } = await import('pino-pretty');
  const prettify = prettyFactory({
    colorize: stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: true,
  });
  return pino({ level }, { write: (line: string) => stdout.write(prettify(line)) });
}
