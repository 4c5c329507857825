import { parse as parseYaml } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiHarness, BACKEND_1_CREATED, dataplaneBody, HISTORY_AT, startApi, writeHistory } from '../api/api-harness.js';
import { mesh } from '../store/fixtures.js';
import { runCli } from './cli-harness.js';

let api: ApiHarness;

afterEach(async () => {
  await api.close();
});

const cli = (...argv: string[]) => runCli(argv, { env: { CHANCERY_API_ADDRESS: api.address } });


describe('chancery history', () => {
  it('prints a dataplane’s events as a table: seq, time, kind, version, author', async () => {
    api = await startApi({ now: () => new Date(HISTORY_AT) });
    await writeHistory(api);
    const { code, stdout, stderr } = await cli('history', 'dp', 'backend-1');
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout.split('\n')).toEqual([
      'SEQ   TIME                       KIND       VERSION   AUTHOR',
      '2     2030-01-02T03:04:05.000Z   upserted   1         test (127.0.0.1)',
      '3     2030-01-02T03:04:05.000Z   upserted   2         test (127.0.0.1)',
      '5     2030-01-02T03:04:05.000Z   deleted    3         test (127.0.0.1)',
      '6     2030-01-02T03:04:05.000Z   upserted   4         test (127.0.0.1)',
      '',
    ]);
  });

  it('prints a mesh’s own events, authored by the instance when no caller wrote it', async () => {
    api = await startApi({ now: () => new Date(HISTORY_AT) });
    expect((await cli('history', 'mesh', 'default')).stdout).toBe(
      'SEQ   TIME                       KIND       VERSION   AUTHOR\n1     2030-01-02T03:04:05.000Z   upserted   1         test\n',
    );
  });

  it('prints the events in full with -o json and -o yaml', async () => {
    api = await startApi({ now: () => new Date(HISTORY_AT) });
    await writeHistory(api);
    const json = JSON.parse((await cli('history', 'dp', 'backend-1', '-o', 'json')).stdout) as unknown[];
    expect(json).toHaveLength(4);
    expect(json[0]).toEqual(BACKEND_1_CREATED);
    expect(parseYaml((await cli('history', 'dp', 'backend-1', '-o', 'yaml')).stdout)).toEqual(json);
  });

  it('reads a history longer than one page to its end', async () => {
    api = await startApi();
    // Alternating the mesh's auth mode makes every write a change (an identical one appends nothing).
    for (let i = 0; i < 1_001; i += 1) await api.store.put({ ...mesh('m'), dataplaneAuth: i % 2 === 0 ? 'none' : 'token' });
    const { stdout } = await cli('history', 'mesh', 'm', '-o', 'json');
    expect((JSON.parse(stdout) as { version: number }[]).map((event) => event.version).at(-1)).toBe(1_001);
  });

  it('says where the retained history starts when older events were compacted', async () => {
    api = await startApi({ retention: { events: 2 } });
    await writeHistory(api);
    await api.store.compact();
    const { code, stdout, stderr } = await cli('history', 'dp', 'backend-1');
    expect(code).toBe(0);
    expect(stdout.split('\n').slice(1, -1).map((line) => line.split(/\s+/)[0])).toEqual(['5', '6']);
    expect(stderr).toBe('Events up to revision 4 were compacted (retention): the history kept starts after it.\n');
  });

  it('exits 1 with the server’s 404 for a resource that never existed', async () => {
    api = await startApi();
    const { code, stderr } = await cli('history', 'dp', 'nobody', '--mesh', 'default');
    expect(code).toBe(1);
    expect(stderr).toContain('CHANCERY_STORE_NOT_FOUND (HTTP 404)');
  });

  it.each([
    [['history'], 'TYPE and NAME are required'],
    [['history', 'dp'], 'TYPE and NAME are required'],
    [['history', 'mesh', 'default', '--mesh', 'x'], '--mesh applies to dataplanes'],
    [['history', 'pods', 'x'], 'unknown resource type "pods"'],
    [['history', 'dp', 'a', '-o', 'xml'], '-o must be one of table, json, yaml'],
  ])('exits 2 for %j', async (argv, message) => {
    api = await startApi();
    const { code, stderr } = await cli(...argv);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
  });
});

describe('chancery get --revision', () => {
  it('prints a resource as it was at a revision', async () => {
    api = await startApi();
    await writeHistory(api);
    const atThree = JSON.parse((await cli('get', 'dp', 'backend-1', '--revision', '3', '-o', 'json')).stdout) as unknown;
    expect(atThree).toEqual({ ...dataplaneBody('backend-1', 10002), version: 2 });
    const { code, stderr } = await cli('get', 'dp', 'backend-1', '--revision', '5');
    expect(code).toBe(1);
    expect(stderr).toContain('Dataplane default/backend-1 did not exist at revision 5');
  });

  it('exits 2 for a revision without NAME, or one that is not a number', async () => {
    api = await startApi();
    expect((await cli('get', 'dp', '--revision', '3')).stderr).toContain('--revision reads one resource');
    const { code, stderr } = await cli('get', 'dp', 'backend-1', '--revision', 'latest');
    expect(code).toBe(2);
    expect(stderr).toContain('--revision must be a store revision');
  });
});
