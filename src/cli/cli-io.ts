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
    // `on`, not `once`, and the new listener added before the old is removed: Node restores a
    // signal's default action (exit) whenever its last listener goes, and the second Ctrl-C,
    // npm's, arriving in that instant killed Chancery mid-drain (test/cli/ctrl-c.test.ts, 1 run in 8).
    const stop = (signal: NodeJS.Signals) => {
      process.on('SIGINT', stopping);
      process.on('SIGTERM', stopping);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** A signal received while stopping already. */
const stopping = () => {};
