import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { AdsStream } from '../support/ads-client.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CLUSTER = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';

interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

let running: ChildProcess | undefined;

afterEach(() => {
  // A failed test must not leave the process group behind.
  if (running?.exitCode === null && running.signalCode === null) process.kill(-running.pid!, 'SIGKILL');
  running = undefined;
});

/**
 * `npm start` as a terminal runs it: in a process group of its own, so that a signal sent to
 * the group reaches npm and everything it started, as Ctrl-C does. Resolves with the start
 * line once it is logged (stdout is a pipe here, so the lines are JSON).
 */
async function npmStart(args: readonly string[]): Promise<{ child: ChildProcess; exited: Promise<Exit>; started: Record<string, unknown>; output: () => string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('CHANCERY_') && !name.startsWith('npm_')));
  const child = spawn('npm', ['start', '--', '--xds-address', '127.0.0.1:0', '--api-address', '127.0.0.1:0', ...args], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running = child;
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let output = '';
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (output += text));
  const started = await new Promise<Record<string, unknown>>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`;
      // npm's own lines (`> chancery@… start`) come first and are not JSON.
      if (!line.startsWith('{')) return;
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry['msg'] === 'chancery started') resolve(entry);
    });
    void exited.then((exit) => reject(new Error(`npm start exited (${exit.code ?? exit.signal}) before it started:\n${output}`)));
  });
  return { child, exited, started, output: () => output };
}

describe('Ctrl-C on npm start', () => {
  it('drains: the open stream ends with UNAVAILABLE and the reason, and npm start exits 0', async () => {
    const { child, exited, started, output } = await npmStart(['--store', 'memory', '--drain-period', '1s']);
    const put = await fetch(`http://${String(started['api'])}/meshes/default/dataplanes/web-1`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'Dataplane', mesh: 'default', name: 'web-1', networking: { address: '127.0.0.1', inbound: [{ port: 9000, tags: { service: 'web' } }] } }),
    });
    expect(put.status).toBe(201);
    const stream = AdsStream.open(String(started['xds']));
    try {
      stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1' });
      await stream.nextResponse();

      // What a terminal does on Ctrl-C: SIGINT to every process of the foreground group (npm
      // forwards it to its script as well, so Chancery receives it twice).
      process.kill(-child.pid!, 'SIGINT');

      const end = await stream.ending('the drained stream’s status');
      expect(end.code, `stream ended ${JSON.stringify(end)}`).toBe(status.UNAVAILABLE);
      expect(end.details).toMatch(/^instance \S+ is draining; reconnect to another instance$/);
      expect(await exited, output()).toEqual({ code: 0, signal: null });
      expect(output()).toMatch(/"signal":"SIGINT","msg":"stopping"/);
      expect(output()).toMatch(/"msg":"chancery stopped"/);
    } finally {
      stream.close();
    }
  });
});
