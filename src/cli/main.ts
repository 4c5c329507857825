import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { type CliIo, stopSignal } from './cli-io.js';
import type { Command } from './command.js';
import { apiTokenCommand } from './commands/api-token-command.js';
import { agentCommand } from './commands/agent-command.js';
import { applyCommand } from './commands/apply-command.js';
import { bootstrapCommand } from './commands/bootstrap-command.js';
import { caCommand } from './commands/ca-command.js';
import { deleteCommand } from './commands/delete-command.js';
import { getCommand } from './commands/get-command.js';
import { historyCommand } from './commands/history-command.js';
import { inspectCommand } from './commands/inspect-command.js';
import { keyCommand } from './commands/key-command.js';
import { diffCommand } from './commands/diff-command.js';
import { revertCommand } from './commands/revert-command.js';
import { rolloutCommand } from './commands/rollout-command.js';
import { runCommand } from './commands/run-command.js';
import { statechartCommand } from './commands/statechart-command.js';
import { tokenCommand } from './commands/token-command.js';
import { UsageError } from './errors.js';
import { EXIT, reportError } from './report-error.js';

const COMMANDS: readonly Command[] = [
  runCommand,
  applyCommand,
  getCommand,
  deleteCommand,
  historyCommand,
  diffCommand,
  revertCommand,
  rolloutCommand,
  inspectCommand,
  bootstrapCommand,
  statechartCommand,
  tokenCommand,
  keyCommand,
  apiTokenCommand,
  caCommand,
  agentCommand,
];

const OVERVIEW = `Usage: chancery COMMAND [options]

${COMMANDS.map((command) => `  ${command.name.padEnd(12)}${command.summary}`).join('\n')}

'chancery COMMAND --help' shows a command's options.
`;

/**
 * The `chancery` command: runs `argv` (without `node` and the script) and resolves with the
 * exit code: 0 ok, 1 refused, not found, unreachable or failed, 2 a usage error. It never
 * exits the process itself, so tests call it in-process with their own `io`.
 */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  const full: CliIo = {
    stdout: io.stdout ?? process.stdout,
    stderr: io.stderr ?? process.stderr,
    env: io.env ?? process.env,
    // A getter: reading process.stdin opens it, which only `apply -f -` should do.
    get stdin() {
      return io.stdin ?? process.stdin;
    },
    stopRequested: io.stopRequested ?? stopSignal,
  };
  const [name, ...rest] = argv;
  if (name === undefined) {
    full.stderr.write(OVERVIEW);
    return EXIT.usage;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    full.stdout.write(OVERVIEW);
    return EXIT.ok;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  try {
    if (command === undefined) throw new UsageError(`unknown command "${name}"; commands: ${COMMANDS.map((known) => known.name).join(', ')}`);
    if (rest.includes('--help') || rest.includes('-h')) {
      full.stdout.write(command.help);
      return EXIT.ok;
    }
    return await command.run(rest, full);
  } catch (error) {
    return reportError(error, full.stderr, command?.name);
  }
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    // Real paths on both sides: import.meta.url has symlinks resolved, argv may not.
    return pathToFileURL(realpathSync(script)).href === import.meta.url;
  } catch {
    return false; // argv[1] is not a file (node -e, a REPL): imported, not run
  }
}

// `tsx src/cli/main.ts` (npm start); bin/chancery.js calls main() itself. process.exit, as
// fetch keeps idle connections open for a few seconds after a client command.
if (isEntryPoint()) process.exit(await main(process.argv.slice(2)));
