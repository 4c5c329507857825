import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiFor, dataplaneBody } from '../api/api-harness.js';
import { runCli } from './cli-harness.js';

const api = apiFor({ dataplanes: [dataplaneBody('backend-1')] });

const cli = (...argv: string[]) => runCli(argv, { env: { CHANCERY_API_ADDRESS: api.address } });

describe('chancery bootstrap', () => {
  it('prints what GET …/bootstrap answers, for Envoy and for gRPC', async () => {
    for (const [argv, query] of [
      [['envoy'], '?format=envoy'],
      [['envoy', '--delta', '--admin-port', '0', '--xds', '[::1]:15678'], '?format=envoy&delta=true&adminPort=0&xds=[::1]:15678'],
      [['grpc', '--xds', 'cp.example:5678'], '?format=grpc&xds=cp.example:5678'],
    ] as const) {
      const { code, stdout, stderr } = await cli('bootstrap', ...argv, '--node', 'default.backend-1');
      expect(code, stderr).toBe(0);
      expect(stdout).toBe(await (await fetch(`${api.url}/meshes/default/dataplanes/backend-1/bootstrap${query}`)).text());
    }
  });

  it('writes to --output', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'chancery-bootstrap-'));
    try {
      const file = path.join(dir, 'envoy.yaml');
      const { code, stdout } = await cli('bootstrap', 'envoy', '--node', 'default.backend-1', '--output', file);
      expect(code).toBe(0);
      expect(stdout).toBe('');
      expect(readFileSync(file, 'utf8')).toContain('id: default.backend-1');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 1 with the server’s reason for a Dataplane that does not exist', async () => {
    const { code, stderr } = await cli('bootstrap', 'grpc', '--node', 'default.nobody');
    expect(code).toBe(1);
    expect(stderr).toContain('CHANCERY_STORE_NOT_FOUND');
    expect(stderr).toContain('Dataplane default/nobody does not exist');
  });

  it.each([
    [[], 'say which bootstrap: envoy or grpc'],
    [['istio', '--node', 'default.backend-1'], 'unknown bootstrap "istio"'],
    [['envoy'], '--node MESH.NAME is required'],
    [['envoy', '--node', 'backend-1'], 'has no dot'],
    [['grpc', '--node', 'default.backend-1', '--delta'], '--delta applies to envoy'],
    [['grpc', '--node', 'default.backend-1', '--admin-port', '9901'], '--admin-port applies to envoy'],
    [['envoy', '--node', 'default.backend-1', '--xds', 'nowhere'], '--xds must be host:port'],
    [['envoy', '--node', 'default.backend-1', '--admin-port', '99999'], '--admin-port must be a port'],
  ])('refuses %j with a usage error', async (argv, message) => {
    const { code, stderr } = await cli('bootstrap', ...argv);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
  });
});
