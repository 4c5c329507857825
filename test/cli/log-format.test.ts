import { spawn } from 'node:child_process';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/index.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const START_LINE = /chancery started/;

/**
 * Runs `chancery run` in-process until its start line, then stops it, and returns everything
 * it wrote to a stdout that says it is (or is not) a terminal.
 */
async function runOutput(args: readonly string[], { isTTY, env = {} }: { isTTY: boolean; env?: Record<string, string> }): Promise<string> {
  let output = '';
  let started!: () => void;
  const startedLine = new Promise<void>((resolve) => (started = resolve));
  const code = main(['run', '--store', 'memory', '--xds-address', '127.0.0.1:0', '--api-address', '127.0.0.1:0', '--drain-period', '0', ...args], {
    stdout: {
      isTTY,
      write: (text: string) => {
        output += text;
        if (START_LINE.test(text)) started();
      },
    },
    stderr: { write: (text: string) => (output += text) },
    env,
    stdin: Readable.from([]),
    stopRequested: () => startedLine.then(() => 'SIGTERM'),
  });
  expect(await code, output).toBe(0);
  return output;
}

const lines = (output: string) => output.trimEnd().split('\n');

describe('chancery run logs', () => {
  it('writes one JSON object a line when stdout is not a terminal', async () => {
    const output = await runOutput([], { isTTY: false });
    for (const line of lines(output)) expect(() => JSON.parse(line), line).not.toThrow();
    expect(lines(output).map((line) => (JSON.parse(line) as { msg: string }).msg)).toContain('chancery started');
  });

  it('writes a line for a person on a terminal: local time, level, message and fields on one line, no JSON object', async () => {
    const output = await runOutput([], { isTTY: true });
    const started = lines(output).find((line) => START_LINE.test(line));
    // Coloured on a terminal: the level is wrapped in ANSI colour codes.
    expect(started).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] \u001b\[32mINFO\u001b\[39m: \u001b\[36mchancery started\u001b\[39m \u001b\[90m\{.*"store":"memory"/);
    for (const line of lines(output)) expect(line.startsWith('{'), line).toBe(false);
  });

  it('writes JSON lines on a terminal with --log-format json, or CHANCERY_LOG_FORMAT=json', async () => {
    for (const output of [await runOutput(['--log-format', 'json'], { isTTY: true }), await runOutput([], { isTTY: true, env: { CHANCERY_LOG_FORMAT: 'json' } })]) {
      for (const line of lines(output)) expect(() => JSON.parse(line), line).not.toThrow();
    }
  });

  it('writes pretty lines, uncoloured, to a file or pipe with --log-format pretty', async () => {
    const output = await runOutput(['--log-format', 'pretty'], { isTTY: false });
    expect(lines(output).find((line) => START_LINE.test(line))).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: chancery started \{/);
  });

  it('refuses a format it does not know, naming the flag', async () => {
    let stderr = '';
    const code = await main(['run', '--log-format', 'xml'], {
      stdout: { write: () => true },
      stderr: { write: (text: string) => (stderr += text) },
      env: {},
      stdin: Readable.from([]),
    });
    expect(code).toBe(2);
    expect(stderr).toContain('--log-format: expected one of pretty, json; got "xml"');
  });

  it('is pretty on a real terminal (a pseudo-terminal made by script(1)), through npm start', async () => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('CHANCERY_') && !name.startsWith('npm_')));
    const command = 'npm start -- --store memory --xds-address 127.0.0.1:0 --api-address 127.0.0.1:0 --drain-period 0';
    // script(1) runs the command on a pseudo-terminal and copies what it shows to its own stdout.
    const child = spawn('script', ['--quiet', '--return', '--command', command, '/dev/null'], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.setEncoding('utf8').on('data', (text: string) => {
          output += text;
          if (START_LINE.test(output)) resolve();
        });
        void exited.then(() => reject(new Error(`npm start exited before it started:\n${output}`)));
      });
    } finally {
      process.kill(-child.pid!, 'SIGINT');
      await exited;
    }
    const started = output.split(/\r?\n/).find((line) => START_LINE.test(line));
    expect(started).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] \u001b\[32mINFO\u001b\[39m: \u001b\[36mchancery started/);
  });
});
