/** Where a command writes, what it reads, and how it learns it should stop; tests pass their own. */
export interface CliIo {
  readonly stdout: TextSink;
  readonly stderr: TextSink;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Read by `apply -f -`. */
  readonly stdin: AsyncIterable<string | Uint8Array>;
  /** Resolves with the signal's name when the process is asked to stop; `run` then stops. */
  stopRequested(): Promise<string>;
}

export interface TextSink {
  write(text: string): unknown;
  /** True on a terminal (process.stdout's own flag): people read it, so output is for them. */
  readonly isTTY?: boolean;
}

/**
 * Resolves with the first SIGINT or SIGTERM the process receives. Later ones are ignored while
 * it stops, rather than killing it mid-drain: one Ctrl-C in a terminal reaches the process
 * more than once, from the terminal (to the whole process group) and again from npm, which
 * forwards the signals it receives to its script.
 */
export function stopSignal(): Promise<string> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      process.on('SIGINT', stopping);
      process.on('SIGTERM', stopping);
      resolve(signal);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/** A signal received while stopping already. */
const stopping = () => {};
