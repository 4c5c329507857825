import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeResourceMessage, encodeResourceMessage, resourceJson, validate } from '../../src/mesh/index.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import { OpenStreams } from '../support/open-streams.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { testPython } from '../support/python.js';

/**
 * proto/ is the one schema of the API's JSON: Python, with Chancery's .proto compiled by protoc,
 * reads what the API answers, strictly (a field the .proto does not declare is an error).
 */

// Fails the file at once, naming the install command, on a machine without the test Python.
const PYTHON = testPython();
const ROOT = path.resolve(import.meta.dirname, '../..');

let generated: string;
let harness: Harness;
const streams = new OpenStreams(() => harness.xds);

beforeAll(async () => {
  generated = mkdtempSync(path.join(tmpdir(), 'chancery-proto-py-'));
  const include = execFileSync(PYTHON, ['-c', 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))'], { encoding: 'utf8' }).trim();
  execFileSync(PYTHON, ['-m', 'grpc_tools.protoc', `-I${path.join(ROOT, 'proto')}`, `-I${include}`, `--python_out=${generated}`, 'chancery/v1/resources.proto', 'chancery/v1/sessions.proto']);
  harness = await startHarness();
});

afterAll(async () => {
  streams.closeAll();
  await harness.stop();
  rmSync(generated, { recursive: true, force: true });
});

/** Has Python read each document as the named chancery.v1 message; returns what it wrote back. */
function readInPython(documents: ReadonlyArray<{ message: string; json: unknown }>): Array<{ ok: boolean; json?: unknown; error?: string }> {
  const run = spawnSync(PYTHON, [path.join(ROOT, 'test/fixtures/read_with_proto.py'), generated], {
    input: documents.map((document) => JSON.stringify(document)).join('\n'),
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout.trim().split('\n').map((line) => JSON.parse(line));
}

const get = async (route: string) => (await fetch(`http://${harness.api}${route}`)).json();

describe('the chancery.v1 schema (proto/)', () => {
  it('is what the API answers resources in: Python reads them strictly and writes back the same JSON', async () => {
    await harness.cp.apply(backendDataplane('backend-1', 10001));
    await harness.cp.apply({
      type: 'Dataplane',
      mesh: 'default',
      name: 'web-1',
      networking: { address: '::1', inbound: [{ port: 10002, servicePort: 9002, tags: { service: 'web', 'kuma.io/zone': 'east' } }], outbound: [{ port: 20001, service: 'backend' }] },
    });
    const documents = [
      { message: 'Mesh', json: await get('/meshes/default') },
      ...((await get('/meshes/default/dataplanes')) as { items: unknown[] }).items.map((json) => ({ message: 'Dataplane', json })),
    ];
    const read = readInPython(documents);
    expect(read.map((result) => result.error)).toEqual(documents.map(() => undefined));
    // Written back by Python's protobuf, the JSON is the API's (empty lists, which proto3 JSON leaves out, aside).
    const withoutEmpty = (value: unknown): unknown =>
      JSON.parse(JSON.stringify(value, (_key, field) => (Array.isArray(field) && field.length === 0 ? undefined : typeof field === 'number' && _key === 'version' ? String(field) : field)));
    expect(read.map((result) => result.json)).toEqual(documents.map((document) => withoutEmpty(document.json)));
  });

  it('is what the API answers sessions in', async () => {
    await harness.cp.apply(backendDataplane('backend-2', 10003));
    const stream = streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.backend-2' });
    stream.ack(await stream.nextResponse());
    const read = readInPython([{ message: 'SessionView', json: await get('/sessions/default.backend-2') }]);
    expect(read[0]?.error).toBeUndefined();
    expect(read[0]?.json).toMatchObject({ node: 'default.backend-2', state: 'serving', types: { CDS: { typeUrl: CLUSTER } } });
  });

  it('refuses, in Python as in Chancery, a document with a field it does not declare', () => {
    const [read] = readInPython([{ message: 'Dataplane', json: { type: 'Dataplane', mesh: 'default', name: 'x', networking: { address: '127.0.0.1', inbounds: [] } } }]);
    expect(read?.ok).toBe(false);
    expect(read?.error).toContain('inbounds');
    expect(validate({ type: 'Dataplane', mesh: 'default', name: 'x', networking: { address: '127.0.0.1', inbounds: [] } }).ok).toBe(false);
  });

  it('carries every resource through its binary message unchanged', () => {
    const dataplane = validate({
      type: 'Dataplane',
      mesh: 'default',
      name: 'web-1',
      networking: { address: '10.0.0.1', inbound: [{ port: 1, servicePort: 2, tags: { service: 's', v: '1' } }], outbound: [{ port: 3, service: 't' }] },
    });
    const mesh = validate({ type: 'Mesh', name: 'payments' });
    for (const parsed of [dataplane, mesh]) {
      if (!parsed.ok) throw new Error('fixture is invalid');
      const back = decodeResourceMessage(parsed.resource.type, encodeResourceMessage(parsed.resource));
      expect(back).toEqual(resourceJson(parsed.resource));
      expect(validate(back)).toEqual(parsed);
    }
  });
});
