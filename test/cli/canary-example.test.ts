import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiHarness, startApi } from '../api/api-harness.js';
import { runCli } from './cli-harness.js';

const EXAMPLES = path.resolve(import.meta.dirname, '../../examples');

let api: ApiHarness;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const cli = (...argv: string[]) => runCli([...argv, '--api-address', api.address]);

describe('the README’s canary (examples/canary.yaml, examples/canary-done.yaml)', () => {
  it('splits web-1’s requests 90/10 between echo v1 and v2, as inspect --policies shows, then sends them all to v2', async () => {
    expect((await cli('apply', '-f', path.join(EXAMPLES, 'dataplanes.yaml'))).code).toBe(0);
    const canary = await cli('apply', '-f', path.join(EXAMPLES, 'canary.yaml'));
    expect(canary).toMatchObject({ code: 0, stderr: '', stdout: 'Dataplane default/echo-1 configured\nDataplane default/echo-2 configured\nMeshHTTPRoute default/echo-canary created\n3 resources: 1 created, 2 configured, 0 unchanged, 0 refused\n' });

    const split = (await cli('inspect', 'default.web-1', '--policies')).stdout;
    expect(split).toContain('Outbound outbound:127.0.0.1:20001 → echo (Envoy), protocol http');
    expect(split).toMatch(/PathPrefix \/\s+echo:version=v1 90%, echo:version=v2 10%\s+MeshHTTPRoute echo-canary/);

    expect((await cli('apply', '-f', path.join(EXAMPLES, 'canary-done.yaml'))).code).toBe(0);
    const done = (await cli('inspect', 'default.web-1', '--policies')).stdout;
    expect(done).toMatch(/PathPrefix \/\s+echo:version=v2 100%\s+MeshHTTPRoute echo-canary/);
  });
});
