import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiFor, dataplaneBody } from '../api/api-harness.js';
import { runCli } from '../cli/cli-harness.js';
import { envoyBinary } from '../support/envoy.js';

// Fails the file at once, naming the install command, on a machine without Envoy.
const ENVOY = envoyBinary();

const api = apiFor({ scope: 'all', dataplanes: [dataplaneBody('backend-1')] });
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'chancery-envoy-validate-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('every bootstrap chancery bootstrap envoy prints', () => {
  it.each([
    ['State of the World to an address', []],
    ['Delta', ['--delta']],
    ['to a balancer named by DNS', ['--xds', 'xds.example.internal:15678']],
    ['to an IPv6 address, admin port chosen by the OS', ['--xds', '[::1]:5678', '--admin-port', '0']],
  ])('passes real Envoy’s own validation: %s', async (_what, flags) => {
    const { code, stdout, stderr } = await runCli(['bootstrap', 'envoy', '--node', 'default.backend-1', ...flags], { env: { CHANCERY_API_ADDRESS: api.address } });
    expect(code, stderr).toBe(0);
    const file = path.join(dir, `bootstrap-${flags.join('_') || 'plain'}.yaml`);
    writeFileSync(file, stdout);
    const validation = spawnSync(ENVOY, ['--mode', 'validate', '-c', file, '--disable-hot-restart', '--log-level', 'warn'], { encoding: 'utf8', timeout: 30_000 });
    expect(validation.status, `${validation.stdout}\n${validation.stderr}`).toBe(0);
    expect(validation.stdout).toContain('OK');
  });
});
