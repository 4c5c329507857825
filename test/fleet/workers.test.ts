import { describe, expect, it } from 'vitest';
import { CLUSTER, LISTENER } from '../../src/xds/type-urls.js';
import { call, chanceryOnPostgres, startChancery } from '../e2e/chancery-process.js';
import { ReconnectingEnvoy } from '../support/reconnecting-envoy.js';
import { eventually } from '../support/traffic.js';
import { envoyDataplane } from '../xds/fixtures.js';

/**
 * `chancery run --workers 2` (issue 12): worker processes, each an instance of its own, on one
 * xDS port and one API port, sharing a real Postgres; Envoy-like nodes on a connection each.
 */

const NODES = Array.from({ length: 8 }, (_, i) => `web-${i + 1}`);
const LISTENERS = ['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001'];

interface WorkerInfo {
  readonly index: number;
  readonly instance: string;
  readonly pid: number;
}

const { newDatabase, cleanups } = chanceryOnPostgres();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The instance serving the envoy's current stream, once a response said so. */
const servingInstance = (envoy: ReconnectingEnvoy) => envoy.streams.at(-1)?.servedBy();

/**
 * Served on a stream after its first `streams`: a response came on it, and the node holds its
 * listeners and clusters (a reconnecting node already holding the current versions is not sent them again).
 */
function served(envoy: ReconnectingEnvoy, streams = 0): boolean {
  const holds = (typeUrl: string) => envoy.updates.some((update) => update.typeUrl === typeUrl && update.holds.length > 0);
  return envoy.streams.slice(streams).some((stream) => stream.servedBy() !== undefined) && holds(LISTENER) && holds(CLUSTER);
}

describe('chancery run --workers 2', () => {
  it('serves every node from one port; a killed worker is started again, and its nodes, told by their streams ending, are served again', async () => {
    const database = await newDatabase();
    const run = await startChancery(
      ['--workers', '2', '--store', database, '--instance-id', 'w', '--record-interval', '100ms', '--instance-ttl', '4s', '--drain-period', '200ms'],
      { ready: 'chancery workers started' },
    );
    const workers = run.started['workers'] as WorkerInfo[];
    expect(workers.map(({ index, instance }) => [index, instance])).toEqual([
      [1, 'w-1'],
      [2, 'w-2'],
    ]);
    expect(workers.every(({ pid }) => alive(pid))).toBe(true);

    // Whichever worker answers, the write is in the store both read.
    for (const name of NODES) expect((await call(`${run.url}/meshes/default/dataplanes/${name}`, 'PUT', envoyDataplane(name))).status).toBe(201);
    const envoys = NODES.map((name) => new ReconnectingEnvoy(run.xds, `default.${name}`, ['backend']));
    cleanups.push(() => Promise.all(envoys.map((envoy) => envoy.stop())));
    await eventually('every node served', () => envoys.every((envoy) => served(envoy)), { attempts: 600, every: 50 });
    for (const envoy of envoys) expect(['w-1', 'w-2']).toContain(servingInstance(envoy));
    const instances = (await call(`${run.url}/instances`, 'GET')).body as { items: Array<{ id: string }> };
    expect(instances.items.map(({ id }) => id).sort()).toEqual(['w-1', 'w-2']);
    // Whichever worker a scrape reaches, it answers for both: the sessions of the host.
    for (let scrape = 0; scrape < 4; scrape++) {
      const metrics = await (await fetch(`${run.url}/metrics`, { headers: { connection: 'close' } })).text();
      expect(metrics).toContain(`chancery_sessions{state="serving"} ${NODES.length}\n`);
      expect(metrics).toContain(`chancery_xds_streams{protocol="sotw"} ${NODES.length}\n`);
    }

    // Kill the worker serving the first node: its nodes' connections end with it.
    const victim = workers.find(({ instance }) => instance === servingInstance(envoys[0]!))!;
    const moved = envoys.filter((envoy) => servingInstance(envoy) === victim.instance).map((envoy) => ({ envoy, streams: envoy.streams.length }));
    process.kill(victim.pid, 'SIGKILL');
    await eventually('the killed worker’s nodes served on new streams', () => moved.every(({ envoy, streams }) => served(envoy, streams)), {
      attempts: 600,
      every: 50,
    });
    await eventually('the worker started again', () => run.output().includes('"msg":"worker started again"'), { attempts: 600, every: 50 });
    const restarted = run
      .output()
      .split('\n')
      .map((line) => (line.includes('"worker started again"') ? (JSON.parse(line) as { index: number; instance: string; pid: number }) : undefined))
      .find((entry) => entry !== undefined)!;
    expect(restarted).toMatchObject({ index: victim.index, instance: victim.instance });
    expect(restarted.pid).not.toBe(victim.pid);
    expect(alive(victim.pid)).toBe(false);

    // Never less than the configuration, from any worker, on any stream.
    for (const envoy of envoys) {
      for (const update of envoy.updates.filter((u) => u.typeUrl === LISTENER)) expect(update.holds, update.servedBy).toEqual(LISTENERS);
    }

    // SIGTERM: every worker drains and exits, then the primary exits 0.
    const pids = [restarted.pid, ...workers.filter(({ pid }) => pid !== victim.pid).map(({ pid }) => pid)];
    expect(await run.stop()).toBe(0);
    expect(pids.filter(alive)).toEqual([]);
    expect(run.output()).toContain('"msg":"stopping the workers"');
  });

  it('starts every worker again when all die at once, and drains one still starting when asked to stop', async () => {
    const database = await newDatabase();
    const run = await startChancery(['--workers', '2', '--store', database, '--instance-id', 'w', '--drain-period', '200ms'], { ready: 'chancery workers started' });
    const workers = run.started['workers'] as WorkerInfo[];
    const lines = (msg: string) =>
      run
        .output()
        .split('\n')
        .filter((line) => line.includes(`"msg":"${msg}"`))
        .map((line) => JSON.parse(line) as { index: number; pid: number });
    for (const { pid } of workers) process.kill(pid, 'SIGKILL');
    // With no worker running, the primary stays to start them again.
    await eventually('both workers started again', () => lines('worker started again').length === 2, { attempts: 600, every: 50 });
    expect(lines('worker started again').map(({ index }) => index).sort()).toEqual([1, 2]);

    // A worker forked but not yet serving when SIGTERM comes is told to stop once it serves.
    const again = lines('worker started again');
    process.kill(again.find(({ index }) => index === 1)!.pid, 'SIGKILL');
    await eventually('a third worker 1 forked', () => lines('worker forked').filter(({ index }) => index === 1).length === 3, { attempts: 600, every: 10 });
    const pids = lines('worker forked').map(({ pid }) => pid);
    expect(await run.stop()).toBe(0);
    expect(pids.filter(alive)).toEqual([]);
  });

  it('exits 1 naming the worker when one cannot start, and leaves no worker behind', async () => {
    // Nothing listens on port 1: each worker's store fails to connect.
    const failed = startChancery(['--workers', '2', '--store', 'postgres://postgres@127.0.0.1:1/chancery'], { ready: 'chancery workers started' });
    const error = await failed.then(
      () => new Error('chancery run --workers started without its store'),
      (reason: Error) => reason,
    );
    expect(error.message).toMatch(/exited \(1\) before it started/);
    expect(error.message).toMatch(/could not start: worker [12] exited \(code 1\) before it served/);
    const forked = error.message.split('\n').filter((line) => line.includes('"msg":"worker forked"'));
    const pids = forked.map((line) => (JSON.parse(line) as { pid: number }).pid);
    expect(pids).toHaveLength(2);
    expect(pids.filter(alive)).toEqual([]);
  });
});
