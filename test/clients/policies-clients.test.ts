import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { EchoClient } from '../support/echo-backend.js';
import { startHarness, type Harness } from '../support/harness.js';
import { testPython } from '../support/python.js';
import { startScriptedGrpcBackend, type ScriptedGrpcBackend } from '../support/scripted-grpc-backend.js';
import { settled } from '../support/session-settled.js';
import { tally } from '../support/traffic.js';
import { bootstrapFor, createXdsEchoClient } from '../support/xds-client.js';

// Fails the file at once, naming the install command, on a machine without the test Python.
const PYTHON = testPython();
const ROOT = path.resolve(import.meta.dirname, '../..');
const EXAMPLES = path.join(ROOT, 'test/fixtures/kuma-examples');
const kuma = (file: string) => parse(readFileSync(path.join(EXAMPLES, file), 'utf8')) as Record<string, unknown>;

/** The proxyless clients: each its own Dataplane serving `frontend` (tag app: frontend), as the Kuma examples select. */
const JS = 'default.js-client';
const PY = 'default.py-client';

/** Calls to gRPC clients' deadlines: long enough for a first call that waits for xDS. */
const DEADLINE_MS = 10_000;

/** A MeshRetry of gRPC calls on UNAVAILABLE, which the Kuma example (HTTP 5xx) is not. */
const GRPC_RETRY = {
  type: 'MeshRetry',
  mesh: 'default',
  name: 'retry-unavailable',
  spec: { targetRef: { kind: 'Mesh' }, to: [{ targetRef: { kind: 'MeshService', name: 'echo' }, default: { grpc: { numRetries: 4, backOff: { baseInterval: '2ms', maxInterval: '10ms' }, retryOn: ['Unavailable'] } } }] },
};

/**
 * Real proxyless gRPC clients (grpc-js-xds in this process, gRPC C-core in Python) under Kuma's
 * policies, measured on RPCs to three real grpc-js backends (echo v1 ×2, v2): one Chancery and
 * one set of backends for the file, each case deleting its policies after it.
 */
describe('traffic policies on proxyless gRPC clients, measured on RPCs', { timeout: 60_000 }, () => {
  let harness: Harness;
  let client: EchoClient;
  let dir: string;
  const backends: ScriptedGrpcBackend[] = [];
  const applied: Array<{ plural: string; name: string }> = [];

  async function apply(policy: Record<string, unknown>): Promise<void> {
    await harness.cp.apply(policy);
    applied.push({ plural: String(policy['type']), name: String(policy['name']) });
    await settled(harness, JS);
  }

  async function rpcs(count: number): Promise<{ served: Record<string, number>; errors: string[]; ms: number[] }> {
    const served: string[] = [];
    const errors: string[] = [];
    const ms: number[] = [];
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      try {
        served.push((await client.echo(DEADLINE_MS)).servedBy);
      } catch (error) {
        errors.push(String((error as { code?: number }).code ?? error));
        ms.push(performance.now() - started);
      }
    }
    return { served: tally(served), errors, ms };
  }

  /** `count` RPCs from a Python C-core client in a process of its own (gRPC reads its bootstrap once per process). */
  function python(count: number): Promise<{ served: Record<string, number>; errors: Record<string, number>; errorMs: number[] }> {
    const bootstrap = path.join(dir, 'py-client.json');
    writeFileSync(bootstrap, JSON.stringify(bootstrapFor({ xdsServer: harness.xds, nodeId: PY })));
    const child = spawn(PYTHON, [path.join(ROOT, 'test/fixtures/xds_echo_tally.py'), 'echo', String(count), String(DEADLINE_MS)], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, GRPC_XDS_BOOTSTRAP: bootstrap },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
    return new Promise((resolve, reject) =>
      child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(`python exited ${code}: ${stderr}`)))),
    );
  }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'chancery-policy-clients-'));
    harness = await startHarness();
    for (const [name, version] of [
      ['echo-v1a', 'v1'],
      ['echo-v1b', 'v1'],
      ['echo-v2', 'v2'],
    ] as const) {
      const backend = await startScriptedGrpcBackend(name);
      backends.push(backend);
      await harness.cp.apply({
        type: 'Dataplane',
        mesh: 'default',
        name,
        networking: { address: '127.0.0.1', inbound: [{ port: backend.port, tags: { service: 'echo', version, protocol: 'grpc' } }] },
      });
    }
    for (const node of [JS, PY]) {
      const name = node.slice('default.'.length);
      await harness.cp.apply({ type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1', inbound: [{ port: 1, tags: { service: 'frontend', app: 'frontend' } }] } });
    }
    client = createXdsEchoClient({ service: 'echo', xdsServer: harness.xds, nodeId: JS });
    await client.echo(DEADLINE_MS);
    await settled(harness, JS);
  });
  afterEach(async () => {
    for (const { plural, name } of applied.splice(0)) await harness.cp.delete({ type: plural as never, mesh: 'default', name });
    for (const backend of backends) backend.behave({ kind: 'ok' });
    await settled(harness, JS);
  });
  afterAll(async () => {
    client?.close();
    for (const backend of backends) await backend.stop();
    await harness?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('splits 90/10 between v1 and v2 (Kuma’s traffic split) within 5 points over 1,000 RPCs of grpc-js-xds', async () => {
    await apply(kuma('meshhttproute-split.yaml'));
    const { served, errors } = await rpcs(1_000);
    expect(errors).toEqual([]);
    const v2 = (served['echo-v2'] ?? 0) / 1_000;
    expect(v2, JSON.stringify(served)).toBeGreaterThanOrEqual(0.05);
    expect(v2, JSON.stringify(served)).toBeLessThanOrEqual(0.15);
  });

  it('splits 90/10 for the Python C-core client too, within 5 points over 1,000 RPCs', async () => {
    await apply(kuma('meshhttproute-split.yaml'));
    const { served, errors } = await python(1_000);
    expect(errors).toEqual({});
    const v2 = (served['echo-v2'] ?? 0) / 1_000;
    expect(v2, JSON.stringify(served)).toBeGreaterThanOrEqual(0.05);
    expect(v2, JSON.stringify(served)).toBeLessThanOrEqual(0.15);
  });

  it('ends RPCs to a backend answering after 3 s in about 1 s under http.requestTimeout 1s, sent as max_stream_duration', async () => {
    await apply(kuma('meshtimeout.yaml'));
    const sent = JSON.stringify(harness.cp.lastSent(JS)?.['RDS']?.resources);
    expect(sent).toContain('"route":{"cluster":"echo","max_stream_duration":{"max_stream_duration":"1s"}}');
    expect(sent).not.toContain('"timeout"');
    for (const backend of backends) backend.behave({ kind: 'slow', delayMs: 3_000 });
    const { errors, ms } = await rpcs(2);
    expect(errors).toEqual(['4', '4']);
    for (const each of ms) {
      expect(each).toBeGreaterThanOrEqual(800);
      expect(each).toBeLessThan(2_000);
    }
  });

  /**
   * gRPC C-core (Python grpcio 1.85) counts a per-method timeout from a time cached before the
   * call starts, about 1–1.7 s early on the test machine: a service config's plain `"timeout":
   * "2s"` ends RPCs after about 0.3 s too, with no xDS involved. So the C-core's RPCs end within
   * 1 s rather than at it; they end, instead of waiting 3 s for the backend, which they do
   * without the policy.
   */
  it('ends the Python C-core client’s RPCs within 1 s under the same timeout, where without it they wait 3 s', async () => {
    for (const backend of backends) backend.behave({ kind: 'slow', delayMs: 3_000 });
    expect(Object.values((await python(1)).served)).toEqual([1]);
    await apply(kuma('meshtimeout.yaml'));
    const { errors, errorMs } = await python(2);
    expect(errors).toEqual({ DEADLINE_EXCEEDED: 2 });
    for (const each of errorMs) expect(each).toBeLessThan(1_200);
  });

  it('makes the UNAVAILABLE of backends failing every other call vanish under a MeshRetry on Unavailable', async () => {
    for (const backend of backends) backend.behave({ kind: 'flaky' });
    const before = await rpcs(60);
    expect(before.errors.length).toBeGreaterThan(10);
    await apply(GRPC_RETRY);
    const after = await rpcs(200);
    expect(after.errors).toEqual([]);
  });

  it('gives the defaults back, the very versions, in one push when a policy is deleted', async () => {
    const versions = () => Object.fromEntries(Object.entries(harness.cp.session(JS)!.types).map(([type, status]) => [type, status.sent?.version]));
    const defaults = versions();
    await apply(kuma('meshhttproute-split.yaml'));
    expect(versions()).not.toEqual(defaults);
    const revision = harness.cp.store.projection.revision;
    await harness.cp.delete({ type: 'MeshHTTPRoute', mesh: 'default', name: 'http-route-1' });
    applied.splice(0);
    await settled(harness, JS);
    // One write, one revision: the node goes from the policy's configuration straight to the defaults.
    expect(harness.cp.session(JS)!.revision).toBe(revision + 1);
    expect(versions()).toEqual(defaults);
    expect((await rpcs(50)).served['echo-v2']).toBeGreaterThan(5);
  });

  it('never NACKs a policy-bearing response: every Kuma example and more at once, ACKed, none refused', async () => {
    for (const file of ['meshhttproute-split.yaml', 'meshhttproute-prefix-v2.yaml', 'meshtimeout.yaml', 'meshretry.yaml', 'meshcircuitbreaker.yaml']) {
      await apply(kuma(file));
    }
    await apply(GRPC_RETRY);
    await apply({
      type: 'MeshCircuitBreaker',
      mesh: 'default',
      name: 'outliers',
      spec: {
        targetRef: { kind: 'Mesh' },
        to: [{ targetRef: { kind: 'Mesh' }, default: { outlierDetection: { interval: '1s', detectors: { totalFailures: { consecutive: 3 }, successRate: {}, failurePercentage: { threshold: 50 } } } } }],
      },
    });
    expect((await rpcs(20)).errors).toEqual([]);
    const view = harness.cp.session(JS)!;
    expect(Object.entries(view.types).filter(([, type]) => type.nacked !== undefined)).toEqual([]);
    const sent = JSON.stringify(harness.cp.lastSent(JS));
    expect(sent).toContain('weighted_clusters');
    expect(sent).not.toMatch(/idle_timeout|"timeout"|consecutive_5xx|max_connections|per_try_timeout/);
  });
});
