import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { apiFor, dataplaneBody, putJson } from '../api/api-harness.js';
import { runCli } from './cli-harness.js';

const api = apiFor({ dataplanes: [dataplaneBody('backend-1'), dataplaneBody('backend-2', 10002)] });

const cli = (...argv: string[]) => runCli(argv, { env: { CHANCERY_API_ADDRESS: api.address } });

describe('chancery get', () => {
  it('prints the dataplanes of a mesh as a table', async () => {
    const { code, stdout } = await cli('get', 'dataplanes');
    expect(code).toBe(0);
    expect(stdout.split('\n')).toEqual([
      'MESH      NAME        ADDRESS     INBOUND         OUTBOUND    VERSION',
      'default   backend-1   127.0.0.1   backend:10001   web:20001   1',
      'default   backend-2   127.0.0.1   backend:10002   web:20001   1',
      '',
    ]);
  });

  it('accepts mesh, meshes, dp and any case as TYPE', async () => {
    expect((await cli('get', 'meshes')).stdout).toBe('NAME      DATAPLANE-AUTH   VERSION\ndefault   none             1\n');
    expect((await cli('get', 'Mesh', 'default')).stdout).toBe('NAME      DATAPLANE-AUTH   VERSION\ndefault   none             1\n');
    expect((await cli('get', 'DP', 'backend-2')).stdout).toContain('backend-2');
  });

  it('prints one resource as JSON, and a list as YAML documents that apply reads back', async () => {
    const json = await cli('get', 'dp', 'backend-1', '-o', 'json');
    expect(JSON.parse(json.stdout)).toMatchObject({ ...dataplaneBody('backend-1'), version: 1 });

    const yaml = await cli('get', 'dp', '-o', 'yaml');
    const documents = parseAllDocuments(yaml.stdout).map((document) => document.toJS() as { name: string; version: number });
    expect(documents.map((document) => [document.name, document.version])).toEqual([
      ['backend-1', 1],
      ['backend-2', 1],
    ]);
    const reapplied = await runCli(['apply', '-f', '-'], { env: { CHANCERY_API_ADDRESS: api.address }, stdin: yaml.stdout });
    expect(reapplied.stdout).toBe('Dataplane default/backend-1 unchanged\nDataplane default/backend-2 unchanged\n2 resources: 0 created, 0 configured, 2 unchanged, 0 refused\n');
  });

  it("refuses to re-apply a copy whose version another write has overtaken", async () => {
    const copy = (await cli('get', 'dp', 'backend-1', '-o', 'yaml')).stdout;
    await putJson(`${api.url}/meshes/default/dataplanes/backend-1`, dataplaneBody('backend-1', 10009));
    const { code, stderr } = await runCli(['apply', '-f', '-'], { env: { CHANCERY_API_ADDRESS: api.address }, stdin: copy });
    expect(code).toBe(1);
    expect(stderr).toContain('CHANCERY_STORE_VERSION_CONFLICT (HTTP 409)');
  });

  it('exits 1 with the server reason for a resource that does not exist', async () => {
    const { code, stderr } = await cli('get', 'dp', 'backend-9');
    expect(code).toBe(1);
    expect(stderr).toBe('CHANCERY_STORE_NOT_FOUND (HTTP 404): Dataplane default/backend-9 does not exist\n  field: name\n');
  });

  it('exits 1 with the field the server names for a name no resource can have', async () => {
    const { code, stderr } = await cli('get', 'dp', 'Backend_9');
    expect(code).toBe(1);
    expect(stderr).toMatch(/^CHANCERY_API_INVALID_NAME \(HTTP 400\): name "Backend_9" in the URL path must be a DNS label.*\n  field: name\n$/);
  });

  it('says so on stderr when a mesh has no dataplanes', async () => {
    await putJson(`${api.url}/meshes/empty`, {});
    const { code, stdout, stderr } = await cli('get', 'dp', '--mesh', 'empty');
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: '', stderr: 'No dataplanes found in mesh empty.\n' });
  });

  it.each([
    [['get'], 'TYPE is required'],
    [['get', 'pods'], 'unknown resource type "pods"'],
    [['get', 'dp', '-o', 'xml'], '-o must be one of table, json, yaml'],
    [['get', 'mesh', '--mesh', 'default'], '--mesh applies to dataplanes'],
    [['get', 'dp', 'a', 'b'], 'unexpected argument "b"'],
    [['get', 'dp', '--all'], "Unknown option '--all'"],
  ])('exits 2 for %j', async (argv, message) => {
    const { code, stderr } = await cli(...argv);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
  });
});

describe('chancery delete', () => {
  it('deletes a dataplane', async () => {
    const { code, stdout } = await cli('delete', 'dp', 'backend-1');
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'Dataplane default/backend-1 deleted\n' });
    expect(api.store.list('Dataplane').map((stored) => stored.resource.name)).toEqual(['backend-2']);
  });

  it('deletes a mesh with its dataplanes', async () => {
    const { code, stdout } = await cli('delete', 'mesh', 'default');
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'Mesh default deleted, with its dataplanes\n' });
    expect(api.store.list('Dataplane')).toEqual([]);
  });

  it('exits 1 for a dataplane that does not exist, and 2 without a name', async () => {
    expect((await cli('delete', 'dp', 'backend-9', '--mesh', 'default')).code).toBe(1);
    const usage = await cli('delete', 'dp');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('TYPE and NAME are required');
  });
});
