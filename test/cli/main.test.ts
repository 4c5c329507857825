import { type AddressInfo, createServer } from 'node:net';
import { Readable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { main } from '../../src/cli/index.js';
import { runCli } from './cli-harness.js';

describe('chancery', () => {
  it('prints the commands for --help and exits 0', async () => {
    const { code, stdout } = await runCli(['--help']);
    expect(code).toBe(0);
    for (const command of ['run', 'apply', 'get', 'delete', 'inspect']) expect(stdout).toContain(`  ${command} `);
  });

  it.each(['run', 'apply', 'get', 'delete', 'inspect'])('prints the usage of %s for --help', async (command) => {
    const { code, stdout } = await runCli([command, '--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(new RegExp(`^Usage: chancery ${command}`));
    expect(stdout).toContain('--api-address');
  });

  it('refuses a flag given twice rather than keep the last one', async () => {
    for (const argv of [
      ['get', 'dataplane', 'web', '--mesh', 'a', '--mesh', 'b'],
      ['get', 'meshes', '-o', 'json', '--output', 'yaml'],
      ['run', '--store', 'pglite:./elsewhere', '--store', 'memory'],
    ]) {
      const { code, stderr } = await runCli(argv);
      expect(code, argv.join(' ')).toBe(2);
      expect(stderr).toMatch(/--(mesh|output|store) is given twice; give it once/);
    }
  });

  it('exits 2 without a command, and for an unknown command', async () => {
    expect((await runCli([])).code).toBe(2);
    const { code, stderr } = await runCli(['deploy']);
    expect(code).toBe(2);
    expect(stderr).toContain('chancery: unknown command "deploy"');
  });
});

describe('chancery run', () => {
  it('starts, logs the bound addresses, serves the API, and stops on a signal with exit 0', async () => {
    let output = '';
    const running = deferred<{ xds: string; api: string }>();
    const stop = deferred<string>();
    // The default store, PGlite, in a directory of its own: a test never writes into the repository.
    const data = mkdtempSync(path.join(tmpdir(), 'chancery-run-'));
    onTestFinished(() => rmSync(data, { recursive: true, force: true }));
    const exited = main(['run', '--store', `pglite:${data}`, '--xds-address', '127.0.0.1:0', '--api-address', '127.0.0.1:0', '--instance-id', 'cp-test'], {
      stdout: {
        write: (text: string) => {
          output += text;
          const line = JSON.parse(text) as { msg: string; xds: string; api: string };
          if (line.msg === 'chancery started') running.resolve(line);
        },
      },
      stderr: { write: (text: string) => (output += text) },
      env: {},
      stdin: Readable.from([]),
      stopRequested: () => stop.promise,
    });
    void exited.then((code) => running.reject(new Error(`run exited ${code} before running:\n${output}`)));

    const { xds, api } = await running.promise;
    expect(xds).toMatch(/^127\.0\.0\.1:\d+$/);
    const health = await fetch(`http://${api}/healthz`);
    expect(await health.json()).toEqual({ status: 'ok' });

    stop.resolve('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toContain('"msg":"stopping"');
  });

  it('exits 2 naming --store for a store it does not know', async () => {
    const { code, stderr } = await runCli(['run', '--store', 'mysql://db', '--xds-address', '127.0.0.1:0', '--api-address', '127.0.0.1:0']);
    expect(code).toBe(2);
    expect(stderr).toContain('--store');
    expect(stderr).toContain('"mysql://db" is not supported');
  });

  it('exits 1 saying why when the store cannot be reached', async () => {
    const unreachable = 'postgres://postgres@127.0.0.1:1/nowhere';
    const { code, stderr } = await runCli(['run', '--store', unreachable, '--xds-address', '127.0.0.1:0', '--api-address', '127.0.0.1:0', '--log-level', 'silent']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^CHANCERY_STORE_UNAVAILABLE: .*ECONNREFUSED/);
  });

  it('exits 1 saying why when the API port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const { code, stderr } = await runCli(['run', '--store', 'memory', '--xds-address', '127.0.0.1:0', '--api-address', `127.0.0.1:${port}`, '--log-level', 'silent']);
      expect(code).toBe(1);
      expect(stderr).toMatch(/^CHANCERY_CLI_START_FAILED: could not start: .*EADDRINUSE/);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('exits 2 naming the flag for a bad value, from a flag or from the environment', async () => {
    const fromFlag = await runCli(['run', '--eviction-grace', 'forever']);
    expect(fromFlag.code).toBe(2);
    expect(fromFlag.stderr).toContain('chancery run: --eviction-grace: expected a duration');
    const fromEnv = await runCli(['run'], { env: { CHANCERY_XDS_ADDRESS: 'nowhere' } });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('CHANCERY_XDS_ADDRESS (--xds-address): expected host:port');
  });

  it('refuses to start with API tokens over a memory store, where no call could ever be made', async () => {
    const { code, stdout, stderr } = await runCli(['run', '--store', 'memory', '--api-auth', 'token', '--xds-address', '127.0.0.1:0', '--api-address', '127.0.0.1:0']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/--api-auth token with --store memory: no API token can ever exist/);
  });

  it('lists every store it takes in --help, pglite:memory included', async () => {
    expect((await runCli(['run', '--help'])).stdout).toContain('--store memory|pglite:DIR|pglite:memory|postgres://…');
  });

  it('exits 2 for an unknown flag or an argument', async () => {
    expect((await runCli(['run', '--port', '5678'])).code).toBe(2);
    expect((await runCli(['run', 'now'])).code).toBe(2);
  });
});

/** Promise.withResolvers, which Node 20 lacks. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
