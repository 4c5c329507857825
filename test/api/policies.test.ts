import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { POLICY_PLURALS, POLICY_TYPES, type PolicyType } from '../../src/policies/index.js';
import { runCli } from '../cli/cli-harness.js';
import { type ApiHarness, putJson, startApi } from './api-harness.js';

/** Kuma's own documentation examples, copied unchanged from shared/reference/kuma-examples. */
const KUMA_EXAMPLES = path.resolve(import.meta.dirname, '../fixtures/kuma-examples');
const exampleFiles = readdirSync(KUMA_EXAMPLES).filter((file) => file.endsWith('.yaml')).sort();
const example = (file: string) => parse(readFileSync(path.join(KUMA_EXAMPLES, file), 'utf8')) as Record<string, any>;

let api: ApiHarness;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const cli = (...argv: string[]) => runCli([...argv, '--api-address', api.address]);
const pathOf = (policy: { type: PolicyType; name: string }) => `/meshes/default/${POLICY_PLURALS[policy.type]}/${policy.name}`;

describe('traffic policies as resources (Kuma universal format)', () => {
  it.each(exampleFiles)('applies Kuma example %s unchanged with chancery apply -f, and answers it back as written', async (file) => {
    const written = example(file);
    const applied = await cli('apply', '-f', path.join(KUMA_EXAMPLES, file));
    expect(applied, applied.stderr).toMatchObject({ code: 0, stdout: `${written.type} default/${written.name} created\n1 resource: 1 created, 0 configured, 0 unchanged, 0 refused\n` });

    const answer = await fetch(`${api.url}${pathOf(written as { type: PolicyType; name: string })}`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ ...written, version: 1 });
    const list = (await (await fetch(`${api.url}/meshes/default/${POLICY_PLURALS[written.type as PolicyType]}`)).json()) as { items: Array<{ name: string }> };
    expect(list.items.map((item) => item.name)).toContain(written.name);
  });

  it('lists each type with chancery get, shows one at a revision, its history, and deletes it', async () => {
    const file = path.join(KUMA_EXAMPLES, 'meshtimeout.yaml');
    await cli('apply', '-f', file);
    const changed = { ...example('meshtimeout.yaml'), spec: { ...example('meshtimeout.yaml').spec, targetRef: { kind: 'MeshService', name: 'frontend' } } };
    expect((await putJson(`${api.url}/meshes/default/meshtimeouts/timeout-global`, changed)).status).toBe(200);

    const table = await cli('get', 'meshtimeouts');
    expect(table.stdout).toMatch(/^MESH\s+NAME\s+TARGET\s+TO\s+VERSION\ndefault\s+timeout-global\s+MeshService frontend\s+Mesh\s+\d+\n$/);
    const history = await cli('history', 'meshtimeout', 'timeout-global', '-o', 'json');
    const events = JSON.parse(history.stdout) as Array<{ seq: number; kind: string }>;
    expect(events.length).toBeGreaterThanOrEqual(2);
    const first = await cli('get', 'meshtimeout', 'timeout-global', '--revision', String(events.at(-2)!.seq), '-o', 'json');
    expect(JSON.parse(first.stdout).spec.targetRef).toEqual({ kind: 'Mesh', tags: {} });

    expect(await cli('delete', 'meshtimeout', 'timeout-global')).toMatchObject({ code: 0, stdout: 'MeshTimeout default/timeout-global deleted\n' });
    expect((await fetch(`${api.url}/meshes/default/meshtimeouts/timeout-global`)).status).toBe(404);
  });

  it('refuses a policy for a mesh that does not exist, and a list of one, with 404', async () => {
    const policy = { ...example('meshretry.yaml'), mesh: 'nowhere' };
    const answer = await putJson(`${api.url}/meshes/nowhere/meshretries/meshretry-policy`, policy);
    expect(answer.status).toBe(404);
    expect((await fetch(`${api.url}/meshes/nowhere/meshretries`)).status).toBe(404);
  });

  it('deletes a mesh’s policies with the mesh', async () => {
    expect((await putJson(`${api.url}/meshes/doomed`, { type: 'Mesh', name: 'doomed' })).status).toBe(201);
    for (const type of POLICY_TYPES) {
      const file = exampleFiles.find((name) => example(name).type === type)!;
      const policy: Record<string, any> = { ...example(file), mesh: 'doomed' };
      expect((await putJson(`${api.url}/meshes/doomed/${POLICY_PLURALS[type]}/${policy.name}`, policy)).status).toBe(201);
    }
    expect((await fetch(`${api.url}/meshes/doomed`, { method: 'DELETE' })).status).toBe(204);
    for (const type of POLICY_TYPES) expect(api.store.list(type, 'doomed')).toEqual([]);
  });
});

/** A copy of `value` with the field at `at` (a list of keys and indexes) set to `to`, or removed when `to` is `REMOVE`. */
const REMOVE = Symbol('remove');
function edit(value: unknown, at: ReadonlyArray<string | number>, to: unknown): any {
  const copy = structuredClone(value) as any;
  let parent = copy;
  for (const key of at.slice(0, -1)) parent = parent[key];
  const last = at.at(-1)!;
  if (to === REMOVE) delete parent[last];
  else parent[last] = to;
  return copy;
}

interface Invalid {
  readonly file: string;
  readonly at: ReadonlyArray<string | number>;
  readonly to: unknown;
  /** The field the 400 must name. */
  readonly field: string;
}

const TO = ['spec', 'to', 0] as const;
const TIMEOUT = [...TO, 'default'] as const;
const RETRY = [...TO, 'default', 'http'] as const;
const LIMITS = [...TO, 'default', 'connectionLimits'] as const;
const OUTLIER = [...TO, 'default', 'outlierDetection'] as const;
const RULE = [...TO, 'rules', 0] as const;
const MATCH = [...RULE, 'matches', 0] as const;
const REF = [...RULE, 'default', 'backendRefs', 0] as const;
const dotted = (at: ReadonlyArray<string | number>) => at.map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? key : `.${key}`)).join('');

const INVALID: readonly Invalid[] = [
  { file: 'meshtimeout.yaml', at: ['spec', 'targetRef', 'kind'], to: 'Service', field: 'spec.targetRef.kind' },
  { file: 'meshtimeout.yaml', at: ['spec', 'targetRef', 'name'], to: 'web', field: 'spec.targetRef.name' },
  { file: 'meshtimeout.yaml', at: ['spec', 'to'], to: REMOVE, field: 'spec.to' },
  { file: 'meshtimeout.yaml', at: ['spec', 'to'], to: [], field: 'spec.to' },
  { file: 'meshtimeout.yaml', at: ['spec', 'from'], to: [], field: 'spec.from' },
  { file: 'meshtimeout.yaml', at: [...TO, 'targetRef', 'kind'], to: 'MeshSubset', field: 'spec.to[0].targetRef.kind' },
  { file: 'meshtimeout.yaml', at: [...TO, 'targetRef'], to: { kind: 'MeshService' }, field: 'spec.to[0].targetRef.name' },
  { file: 'meshtimeout.yaml', at: [...TO, 'default'], to: REMOVE, field: 'spec.to[0].default' },
  { file: 'meshtimeout.yaml', at: [...TIMEOUT, 'connectionTimeout'], to: '2 seconds', field: 'spec.to[0].default.connectionTimeout' },
  { file: 'meshtimeout.yaml', at: [...TIMEOUT, 'connectionTimeout'], to: '0s', field: 'spec.to[0].default.connectionTimeout' },
  { file: 'meshtimeout.yaml', at: [...TIMEOUT, 'idleTimeout'], to: 20, field: 'spec.to[0].default.idleTimeout' },
  { file: 'meshtimeout.yaml', at: [...TIMEOUT, 'http', 'requestTimeout'], to: '1x', field: 'spec.to[0].default.http.requestTimeout' },
  { file: 'meshtimeout.yaml', at: [...TIMEOUT, 'http', 'streamIdleTimeout'], to: '-1s', field: 'spec.to[0].default.http.streamIdleTimeout' },
  { file: 'meshtimeout.yaml', at: [...TIMEOUT, 'http', 'maxStreamDuration'], to: 'forever', field: 'spec.to[0].default.http.maxStreamDuration' },
  { file: 'meshtimeout.yaml', at: [...TIMEOUT, 'http', 'requestTimeot'], to: '1s', field: 'spec.to[0].default.http.requestTimeot' },
  { file: 'meshretry.yaml', at: ['spec', 'targetRef', 'name'], to: 'Front_End', field: 'spec.targetRef.name' },
  { file: 'meshretry.yaml', at: [...RETRY, 'numRetries'], to: -1, field: 'spec.to[0].default.http.numRetries' },
  { file: 'meshretry.yaml', at: [...RETRY, 'numRetries'], to: 1.5, field: 'spec.to[0].default.http.numRetries' },
  { file: 'meshretry.yaml', at: [...RETRY, 'perTryTimeout'], to: 'x', field: 'spec.to[0].default.http.perTryTimeout' },
  { file: 'meshretry.yaml', at: [...RETRY, 'backOff'], to: { baseInterval: '0s' }, field: 'spec.to[0].default.http.backOff.baseInterval' },
  { file: 'meshretry.yaml', at: [...RETRY, 'backOff'], to: { baseInterval: '1s', maxInterval: '100ms' }, field: 'spec.to[0].default.http.backOff.maxInterval' },
  { file: 'meshretry.yaml', at: [...RETRY, 'retryOn'], to: ['5xx', 'Teapot'], field: 'spec.to[0].default.http.retryOn[1]' },
  { file: 'meshretry.yaml', at: [...RETRY, 'retryOn'], to: [], field: 'spec.to[0].default.http.retryOn' },
  { file: 'meshretry.yaml', at: [...TO, 'default', 'grpc'], to: { retryOn: ['unavailable'] }, field: 'spec.to[0].default.grpc.retryOn[0]' },
  { file: 'meshretry.yaml', at: [...TO, 'default', 'grpc'], to: { numRetries: 'five' }, field: 'spec.to[0].default.grpc.numRetries' },
  { file: 'meshretry.yaml', at: [...TO, 'default', 'grpc'], to: { perTryTimeout: 'soon' }, field: 'spec.to[0].default.grpc.perTryTimeout' },
  { file: 'meshretry.yaml', at: [...TO, 'default', 'grpc'], to: { backOff: { maxInterval: '0s' } }, field: 'spec.to[0].default.grpc.backOff.maxInterval' },
  { file: 'meshretry.yaml', at: [...TO, 'default', 'tcp'], to: { maxConnectAttempt: 2 }, field: 'spec.to[0].default.tcp' },
  { file: 'meshcircuitbreaker.yaml', at: ['spec', 'targetRef', 'tags'], to: {}, field: 'spec.targetRef.tags' },
  { file: 'meshcircuitbreaker.yaml', at: [...LIMITS, 'maxConnections'], to: 0, field: 'spec.to[0].default.connectionLimits.maxConnections' },
  { file: 'meshcircuitbreaker.yaml', at: [...LIMITS, 'maxPendingRequests'], to: -1, field: 'spec.to[0].default.connectionLimits.maxPendingRequests' },
  { file: 'meshcircuitbreaker.yaml', at: [...LIMITS, 'maxRequests'], to: 'many', field: 'spec.to[0].default.connectionLimits.maxRequests' },
  { file: 'meshcircuitbreaker.yaml', at: [...LIMITS, 'maxRetries'], to: 1.5, field: 'spec.to[0].default.connectionLimits.maxRetries' },
  { file: 'meshcircuitbreaker.yaml', at: OUTLIER, to: { interval: 'soon' }, field: 'spec.to[0].default.outlierDetection.interval' },
  { file: 'meshcircuitbreaker.yaml', at: OUTLIER, to: { baseEjectionTime: '0ms' }, field: 'spec.to[0].default.outlierDetection.baseEjectionTime' },
  { file: 'meshcircuitbreaker.yaml', at: OUTLIER, to: { maxEjectionPercent: 101 }, field: 'spec.to[0].default.outlierDetection.maxEjectionPercent' },
  { file: 'meshcircuitbreaker.yaml', at: OUTLIER, to: { disabled: true }, field: 'spec.to[0].default.outlierDetection.disabled' },
  {
    file: 'meshcircuitbreaker.yaml',
    at: OUTLIER,
    to: { detectors: { totalFailures: { consecutive: 0 } } },
    field: 'spec.to[0].default.outlierDetection.detectors.totalFailures.consecutive',
  },
  {
    file: 'meshcircuitbreaker.yaml',
    at: OUTLIER,
    to: { detectors: { gatewayFailures: { consecutive: 'x' } } },
    field: 'spec.to[0].default.outlierDetection.detectors.gatewayFailures.consecutive',
  },
  {
    file: 'meshcircuitbreaker.yaml',
    at: OUTLIER,
    to: { detectors: { failurePercentage: { threshold: 150 } } },
    field: 'spec.to[0].default.outlierDetection.detectors.failurePercentage.threshold',
  },
  {
    file: 'meshcircuitbreaker.yaml',
    at: OUTLIER,
    to: { detectors: { failurePercentage: { requestVolume: 0 } } },
    field: 'spec.to[0].default.outlierDetection.detectors.failurePercentage.requestVolume',
  },
  {
    file: 'meshcircuitbreaker.yaml',
    at: OUTLIER,
    to: { detectors: { failurePercentage: { minimumHosts: 0 } } },
    field: 'spec.to[0].default.outlierDetection.detectors.failurePercentage.minimumHosts',
  },
  {
    file: 'meshcircuitbreaker.yaml',
    at: OUTLIER,
    to: { detectors: { successRate: { requestVolume: 'lots' } } },
    field: 'spec.to[0].default.outlierDetection.detectors.successRate.requestVolume',
  },
  {
    file: 'meshcircuitbreaker.yaml',
    at: OUTLIER,
    to: { detectors: { successRate: { standardDeviationFactor: 'high' } } },
    field: 'spec.to[0].default.outlierDetection.detectors.successRate.standardDeviationFactor',
  },
  {
    file: 'meshcircuitbreaker.yaml',
    at: OUTLIER,
    to: { detectors: { successRate: { minimumHosts: -1 } } },
    field: 'spec.to[0].default.outlierDetection.detectors.successRate.minimumHosts',
  },
  { file: 'meshhttproute-split.yaml', at: [...TO, 'targetRef'], to: { kind: 'Mesh' }, field: 'spec.to[0].targetRef.kind' },
  { file: 'meshhttproute-split.yaml', at: [...TO, 'rules'], to: [], field: 'spec.to[0].rules' },
  { file: 'meshhttproute-split.yaml', at: [...RULE, 'matches'], to: REMOVE, field: 'spec.to[0].rules[0].matches' },
  { file: 'meshhttproute-split.yaml', at: [...MATCH, 'path', 'type'], to: 'RegularExpression', field: 'spec.to[0].rules[0].matches[0].path.type' },
  { file: 'meshhttproute-split.yaml', at: [...MATCH, 'path', 'value'], to: 'v2', field: 'spec.to[0].rules[0].matches[0].path.value' },
  { file: 'meshhttproute-split.yaml', at: [...MATCH, 'method'], to: 'FETCH', field: 'spec.to[0].rules[0].matches[0].method' },
  { file: 'meshhttproute-split.yaml', at: [...MATCH, 'headers'], to: [{ type: 'Present', name: 'x-canary', value: 'yes' }], field: 'spec.to[0].rules[0].matches[0].headers[0].value' },
  { file: 'meshhttproute-split.yaml', at: [...MATCH, 'headers'], to: [{ type: 'Exact', name: 'x canary', value: 'yes' }], field: 'spec.to[0].rules[0].matches[0].headers[0].name' },
  { file: 'meshhttproute-split.yaml', at: [...MATCH, 'headers'], to: [{ type: 'Prefix', name: 'x-canary', value: 'y' }], field: 'spec.to[0].rules[0].matches[0].headers[0].type' },
  { file: 'meshhttproute-split.yaml', at: [...REF, 'kind'], to: 'MeshGateway', field: 'spec.to[0].rules[0].default.backendRefs[0].kind' },
  { file: 'meshhttproute-split.yaml', at: [...REF, 'weight'], to: -5, field: 'spec.to[0].rules[0].default.backendRefs[0].weight' },
  { file: 'meshhttproute-split.yaml', at: [...REF, 'tags'], to: {}, field: 'spec.to[0].rules[0].default.backendRefs[0].tags' },
  { file: 'meshhttproute-split.yaml', at: [...REF, 'name'], to: 'Echo_Service', field: 'spec.to[0].rules[0].default.backendRefs[0].name' },
  { file: 'meshhttproute-split.yaml', at: [...RULE, 'default', 'filters'], to: [], field: 'spec.to[0].rules[0].default.filters' },
  {
    file: 'meshhttproute-split.yaml',
    at: [...RULE, 'default', 'backendRefs'],
    to: [{ kind: 'MeshService', name: 'echo', weight: 0 }],
    field: 'spec.to[0].rules[0].default.backendRefs',
  },
];

describe('every invalid policy field refused with 400 naming it, nothing stored', () => {
  it.each(INVALID.map((entry) => ({ ...entry, path: dotted(entry.at) })))('$file with $path = $to: 400 naming $field', async ({ file, at, to, field }) => {
    const policy = example(file);
    const before = api.store.projection.revision;
    const answer = await putJson(`${api.url}${pathOf(policy as { type: PolicyType; name: string })}`, edit(policy, at, to));
    const body = (await answer.json()) as { code: string; field: string; issues: Array<{ path: string }> };
    expect(answer.status).toBe(400);
    expect(body.code).toBe('CHANCERY_API_INVALID_RESOURCE');
    expect(body.field).toBe(field);
    expect(body.issues.map((issue) => issue.path)).toEqual([field]);
    expect(api.store.projection.revision).toBe(before);
    expect(api.store.get({ type: policy.type, mesh: 'default', name: policy.name })?.resource).not.toEqual(edit(policy, at, to));
  });

  it('refuses a policy whose body names another mesh, or a name that is not a DNS label', async () => {
    const policy = example('meshretry.yaml');
    const before = api.store.projection.revision;
    const other = await putJson(`${api.url}/meshes/default/meshretries/meshretry-policy`, { ...policy, mesh: 'other' });
    expect([other.status, ((await other.json()) as { field: string }).field]).toEqual([400, 'mesh']);
    const { name: _name, ...unnamed } = policy;
    const badName = await putJson(`${api.url}/meshes/default/meshretries/Retry_All`, unnamed);
    expect([badName.status, ((await badName.json()) as { field: string }).field]).toEqual([400, 'name']);
    expect(api.store.projection.revision).toBe(before);
  });
});
