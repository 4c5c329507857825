import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envoyBinary } from '../support/envoy.js';
import { startHarness, type Harness } from '../support/harness.js';
import { get } from '../support/scripted-http-backend.js';
import { tally } from '../support/traffic.js';
import { CLIENT, rejections, settled, startPolicyMesh, stopPolicyMesh, type PolicyMesh } from './policy-mesh.js';

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

/** `count` sequential GETs of `path` through the client's outbound; each answer's body is who served it, or Envoy's reason. */
async function requests(mesh: PolicyMesh, count: number, path = '/'): Promise<Array<{ status: number; body: string; ms: number }>> {
  const answers = [];
  for (let i = 0; i < count; i++) answers.push(await get(mesh.client.port, path));
  return answers;
}

describe('traffic policies on real Envoy sidecars, measured on traffic', { timeout: 60_000 }, () => {
  let harness: Harness;
  let mesh: PolicyMesh | undefined;
  beforeAll(async () => {
    harness = await startHarness();
    mesh = await startPolicyMesh(harness);
    await settled(harness, `default.${CLIENT}`);
  });
  afterAll(async () => {
    await stopPolicyMesh(mesh);
    await harness?.stop();
  });

  it('reaches an http service through an HTTP connection manager, every backend answering', async () => {
    const answers = await requests(mesh!, 30);
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    expect(Object.keys(tally(answers.map((answer) => answer.body))).sort()).toEqual(['echo-v1a', 'echo-v1b', 'echo-v2']);
    expect(await mesh!.client.envoy.stat('http.echo.downstream_rq_completed')).toBeGreaterThanOrEqual(30);
  });

  it('never had Envoy reject an update', async () => {
    for (const sidecar of mesh!.sidecars.sidecars) expect(await rejections(sidecar.envoy), sidecar.name).toEqual({});
  });
});
