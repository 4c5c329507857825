import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/cli-harness.js';
import { envoyBinary } from '../support/envoy.js';
import { startHarness, type Harness } from '../support/harness.js';
import { get, type Answer } from '../support/scripted-http-backend.js';
import { eventually, tally } from '../support/traffic.js';
import { settled } from '../support/session-settled.js';
import { CLIENT, rejections, startPolicyMesh, stopPolicyMesh, type PolicyMesh } from './policy-mesh.js';

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

const EXAMPLES = path.resolve(import.meta.dirname, '../fixtures/kuma-examples');
const NODE = `default.${CLIENT}`;

/**
 * Kuma's own examples (test/fixtures/kuma-examples, unchanged) applied to real Envoy sidecars,
 * each measured on traffic through the client's outbound: one Chancery, one client sidecar and
 * three backend sidecars for the whole file, each case deleting its policies after it, which
 * gives the defaults back in one push.
 */
describe('traffic policies on real Envoy sidecars, measured on traffic', { timeout: 60_000 }, () => {
  let harness: Harness;
  let mesh: PolicyMesh;
  const applied: Array<{ type: string; name: string }> = [];

  /** Applies a file with chancery apply -f, then waits until the client has ACKed what it made. */
  async function apply(file: string): Promise<void> {
    const result = await runCli(['apply', '-f', path.join(EXAMPLES, file), '--api-address', harness.api]);
    expect(result.code, result.stderr).toBe(0);
    const [, type, name] = /^(\w+) default\/(\S+) created/.exec(result.stdout)!;
    applied.push({ type: type!, name: name! });
    await settled(harness, NODE);
  }

  async function requests(count: number, pathname = '/'): Promise<Answer[]> {
    const answers = [];
    for (let i = 0; i < count; i++) answers.push(await get(mesh.client.port, pathname));
    return answers;
  }

  const servedBy = (answers: readonly Answer[]) => tally(answers.map((answer) => (answer.status === 200 ? answer.body : `HTTP ${answer.status}`)));
  const stat = (name: string) => mesh.client.envoy.stat(name);

  beforeAll(async () => {
    harness = await startHarness();
    mesh = await startPolicyMesh(harness);
    await settled(harness, NODE);
  });
  afterEach(async () => {
    for (const { type, name } of applied.splice(0)) {
      const deleted = await runCli(['delete', type.toLowerCase(), name, '--api-address', harness.api]);
      expect(deleted.code, deleted.stderr).toBe(0);
    }
    for (const backend of mesh.backends) backend.app.behave({ kind: 'ok' });
    await settled(harness, NODE);
  });
  afterAll(async () => {
    await stopPolicyMesh(mesh);
    await harness?.stop();
  });

  it('reaches an http service through an HTTP connection manager, every backend answering', async () => {
    const answers = await requests(30);
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    expect(Object.keys(servedBy(answers)).sort()).toEqual(['echo-v1a', 'echo-v1b', 'echo-v2']);
    expect(await stat('http.echo.downstream_rq_completed')).toBeGreaterThanOrEqual(30);
  });

  it('splits 90/10 between version v1 and v2 (Kuma’s traffic split), within 5 points over 1,000 requests', async () => {
    await apply('meshhttproute-split.yaml');
    const answers = await requests(1_000);
    const counts = servedBy(answers);
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    const v2 = (counts['echo-v2'] ?? 0) / answers.length;
    expect(v2, JSON.stringify(counts)).toBeGreaterThanOrEqual(0.05);
    expect(v2, JSON.stringify(counts)).toBeLessThanOrEqual(0.15);
    expect((counts['echo-v1a'] ?? 0) + (counts['echo-v1b'] ?? 0) + (counts['echo-v2'] ?? 0)).toBe(1_000);
  });

  it('routes a path prefix to v2 only (Kuma’s route-to-backend-v2), and the rest of the paths to every version', async () => {
    await apply('meshhttproute-prefix-v2.yaml');
    expect(servedBy(await requests(30, '/v2/orders'))).toEqual({ 'echo-v2': 30 });
    expect(servedBy(await requests(10, '/v2'))).toEqual({ 'echo-v2': 10 });
    expect(Object.keys(servedBy(await requests(30, '/v2x'))).sort()).toEqual(['echo-v1a', 'echo-v1b', 'echo-v2']);
  });

  it('answers 504 in about 1 s under http.requestTimeout 1s (Kuma’s timeout-global) from a backend answering after 3 s', async () => {
    await apply('meshtimeout.yaml');
    for (const backend of mesh.backends) backend.app.behave({ kind: 'slow', delayMs: 3_000 });
    const answers = await Promise.all([0, 1, 2].map(() => get(mesh.client.port)));
    for (const answer of answers) {
      expect(answer.status).toBe(504);
      expect(answer.ms).toBeGreaterThanOrEqual(800);
      expect(answer.ms).toBeLessThan(2_000);
    }
    expect(await stat('cluster.echo.upstream_rq_timeout')).toBeGreaterThanOrEqual(3);
  });

  it('makes the failures of backends failing half their requests with 503 vanish under MeshRetry (Kuma’s meshretry-policy)', async () => {
    for (const backend of mesh.backends) backend.app.behave({ kind: 'flaky' });
    const before = await requests(60);
    expect(before.filter((answer) => answer.status === 503).length).toBeGreaterThan(10);

    await apply('meshretry.yaml');
    const after = await requests(200);
    expect(after.filter((answer) => answer.status !== 200)).toEqual([]);
    expect(await stat('cluster.echo.upstream_rq_retry')).toBeGreaterThan(0);
  });

  it('ejects an endpoint answering 5xx (outlier detection) and moves its traffic to the healthy ones', async () => {
    const broken = mesh.backends.find((backend) => backend.name === 'echo-v1a')!;
    const policy = {
      type: 'MeshCircuitBreaker',
      mesh: 'default',
      name: 'eject-failing',
      spec: {
        targetRef: { kind: 'MeshService', name: 'frontend' },
        to: [{ targetRef: { kind: 'MeshService', name: 'echo' }, default: { outlierDetection: { interval: '1s', baseEjectionTime: '1m', maxEjectionPercent: 50, detectors: { totalFailures: { consecutive: 3 } } } } }],
      },
    };
    const written = await runCli(['apply', '-f', '-', '--api-address', harness.api], { stdin: JSON.stringify(policy) });
    expect(written.code, written.stderr).toBe(0);
    applied.push({ type: 'MeshCircuitBreaker', name: 'eject-failing' });
    await settled(harness, NODE);

    broken.app.behave({ kind: 'broken' });
    await eventually('echo-v1a ejected', async () => {
      await get(mesh.client.port);
      return (await stat('cluster.echo.outlier_detection.ejections_enforced_consecutive_5xx')) >= 1;
    });
    const received = broken.app.received;
    const after = await requests(60);
    expect(servedBy(after)['HTTP 500']).toBeUndefined();
    expect(Object.keys(servedBy(after)).sort()).toEqual(['echo-v1b', 'echo-v2']);
    expect(broken.app.received).toBe(received);
  });

  it('overflows maxPendingRequests under Kuma’s web-to-backend-circuit-breaker, as Envoy’s own upstream_rq_pending_overflow counts', async () => {
    await apply('meshcircuitbreaker.yaml');
    for (const backend of mesh.backends) backend.app.behave({ kind: 'slow', delayMs: 500 });
    const answers = await Promise.all(Array.from({ length: 40 }, () => get(mesh.client.port)));
    const statuses = tally(answers.map((answer) => String(answer.status)));
    expect(statuses['200'], JSON.stringify(statuses)).toBeGreaterThan(0);
    expect(statuses['503'], JSON.stringify(statuses)).toBeGreaterThan(0);
    expect(await stat('cluster.echo.upstream_rq_pending_overflow')).toBeGreaterThan(0);
  });

  it('never had an Envoy reject an update, policies applied and deleted throughout', async () => {
    for (const sidecar of mesh.sidecars.sidecars) expect(await rejections(sidecar.envoy), sidecar.name).toEqual({});
    expect(await stat('listener_manager.listener_removed')).toBe(0);
  });
});

describe('traffic policies on real Envoy sidecars over Delta xDS', { timeout: 60_000 }, () => {
  let harness: Harness;
  let mesh: PolicyMesh;
  beforeAll(async () => {
    harness = await startHarness();
    mesh = await startPolicyMesh(harness, 'delta');
    await settled(harness, NODE);
  });
  afterAll(async () => {
    await stopPolicyMesh(mesh);
    await harness?.stop();
  });

  it('routes a path prefix to v2 only, its RouteConfiguration and the subset’s endpoints asked for by name, and deleting the route restores every version', async () => {
    const applied = await runCli(['apply', '-f', path.join(EXAMPLES, 'meshhttproute-prefix-v2.yaml'), '--api-address', harness.api]);
    expect(applied.code, applied.stderr).toBe(0);
    await settled(harness, NODE);
    const v2 = await Promise.all(Array.from({ length: 20 }, () => get(mesh.client.port, '/v2/orders')));
    expect(tally(v2.map((answer) => answer.body))).toEqual({ 'echo-v2': 20 });

    expect((await runCli(['delete', 'meshhttproute', 'route-to-backend-v2', '--api-address', harness.api])).code).toBe(0);
    await settled(harness, NODE);
    const after = [];
    for (let i = 0; i < 30; i++) after.push(await get(mesh.client.port, '/v2/orders'));
    expect(Object.keys(tally(after.map((answer) => answer.body))).sort()).toEqual(['echo-v1a', 'echo-v1b', 'echo-v2']);
    for (const sidecar of mesh.sidecars.sidecars) expect(await rejections(sidecar.envoy), sidecar.name).toEqual({});
  });
});
