import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { FieldExplanation, NodePolicies, OutboundExplanation } from '../../src/mesh/index.js';
import { runCli } from '../cli/cli-harness.js';
import { EXPECTED_RETRIES, EXPECTED_ROUTES, EXPECTED_TIMEOUTS, NODES, POLICIES } from '../policies/precedence-table.js';
import { type ApiHarness, putJson, startApi } from './api-harness.js';

const EXAMPLES = path.resolve(import.meta.dirname, '../fixtures/kuma-examples');
const kuma = (file: string) => parse(readFileSync(path.join(EXAMPLES, file), 'utf8')) as Record<string, any>;

let api: ApiHarness;
const cli = (...argv: string[]) => runCli([...argv, '--api-address', api.address]);
const put = async (route: string, body: unknown) => expect((await putJson(`${api.url}${route}`, body)).status).toBeLessThan(300);
const explain = async (node: string): Promise<NodePolicies> => (await (await fetch(`${api.url}/meshes/default/dataplanes/${node}/policies`)).json()) as NodePolicies;

/** A field of the explanation as the precedence table writes it (only fields a policy set). */
function fieldLine({ field, value, from, lost }: FieldExplanation): string {
  const losers = lost.map((ref) => ref.name).sort();
  return `${field}: ${Array.isArray(value) ? value.join(',') : String(value)} ← ${from!.name}${losers.length > 0 ? ` (lost: ${losers.join(', ')})` : ''}`;
}
const setBy = (outbound: OutboundExplanation, policy: string) => outbound.fields.filter((field) => field.policy === policy && field.from !== undefined).map(fieldLine);
const outboundTo = (explanation: NodePolicies, service: string) => explanation.outbounds.find((outbound) => outbound.service === service)!;

beforeAll(async () => {
  api = await startApi();
  // The table's services, speaking HTTP so that every field applies to Envoy outbounds.
  for (const [name, tags] of [
    ['backend-v1', { service: 'backend', version: 'v1' }],
    ['backend-v2', { service: 'backend', version: 'v2' }],
    ['payments-1', { service: 'payments' }],
  ] as const) {
    await put(`/meshes/default/dataplanes/${name}`, { type: 'Dataplane', mesh: 'default', name, networking: { address: '10.0.1.1', inbound: [{ port: 8080, tags: { ...tags, protocol: 'http' } }] } });
  }
  for (const [name, tags] of Object.entries(NODES)) {
    await put(`/meshes/default/dataplanes/${name}`, {
      type: 'Dataplane',
      mesh: 'default',
      name,
      networking: {
        address: '10.0.2.1',
        inbound: tags === undefined ? [] : [{ port: 9000, tags }],
        outbound: [
          { port: 20001, service: 'backend' },
          { port: 20002, service: 'payments' },
        ],
      },
    });
  }
  for (const policy of POLICIES) await put(`/meshes/default/${plural(String(policy['type']))}/${String(policy['name'])}`, policy);
});
afterAll(() => api.close());

function plural(type: string): string {
  return { MeshTimeout: 'meshtimeouts', MeshRetry: 'meshretries', MeshHTTPRoute: 'meshhttproutes', MeshCircuitBreaker: 'meshcircuitbreakers' }[type]!;
}

describe('the precedence table, checked against GET …/policies (what chancery inspect --policies prints)', () => {
  const rows = (expected: typeof EXPECTED_TIMEOUTS) => Object.entries(expected).flatMap(([node, services]) => Object.entries(services).map(([service, fields]) => ({ node, service, fields })));

  it.each(rows(EXPECTED_TIMEOUTS))('MeshTimeout: $node calling $service', async ({ node, service, fields }) => {
    expect(setBy(outboundTo(await explain(node), service), 'MeshTimeout')).toEqual(fields);
  });

  it.each(rows(EXPECTED_RETRIES))('MeshRetry: $node calling $service', async ({ node, service, fields }) => {
    expect(setBy(outboundTo(await explain(node), service), 'MeshRetry')).toEqual(fields);
  });

  it.each(Object.entries(EXPECTED_ROUTES))('MeshHTTPRoute: %s calling backend', async (node, routes) => {
    const explained = outboundTo(await explain(node), 'backend').routes.filter((route) => route.from !== undefined);
    expect(explained.map((route) => `${route.match} ← ${route.from!.name}${route.lost.length > 0 ? ` (lost: ${route.lost.map((ref) => ref.name).join(', ')})` : ''}`)).toEqual(
      routes.map((line) => line.replace(/ → [^←]+ ← /, ' ← ')),
    );
  });

  it('names the policies that select a node, and a field no policy set as the default', async () => {
    const explanation = await explain('web-2');
    expect(explanation.selectedBy.map((ref) => ref.name)).toEqual([
      'backend-v1-by-default',
      'web-backend-canary',
      'retry-all',
      'web-retry-backend',
      '00-base-timeouts',
      '01-consume-backend-timeouts',
      'canary-timeouts',
      'web-timeouts',
      'zz-late-timeouts',
    ]);
    const maxStream = outboundTo(explanation, 'backend').fields.find((field) => field.field === 'http.maxStreamDuration');
    expect(maxStream).toEqual({ policy: 'MeshTimeout', field: 'http.maxStreamDuration', value: 'none', lost: [], as: 'RouteAction.max_stream_duration' });
  });

  it('explains the same node for a proxyless gRPC client: what it does not honour, and why', async () => {
    const grpc = (await explain('web-1')).grpc.find((outbound) => outbound.service === 'backend')!;
    expect(grpc.client).toBe('grpc');
    const skipped = Object.fromEntries(grpc.fields.filter((field) => field.notApplied !== undefined).map((field) => [field.field, field.notApplied]));
    expect(skipped).toMatchObject({
      connectionTimeout: expect.stringContaining('gRPC ignores Cluster.connect_timeout'),
      'http.streamIdleTimeout': expect.stringContaining('gRPC ignores RouteAction.idle_timeout'),
      'http.retryOn': expect.stringContaining('retries on gRPC status codes'),
    });
    expect(grpc.fields.find((field) => field.field === 'http.requestTimeout')?.as).toContain('RouteAction.max_stream_duration');
  });
});

describe('chancery inspect NODE --policies', () => {
  it('prints each outbound’s routes and fields with their sources, and what a client does not honour', async () => {
    const { code, stdout, stderr } = await cli('inspect', 'default.web-1', '--policies');
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('Outbound outbound:127.0.0.1:20001 → backend (Envoy), protocol http');
    expect(stdout).toMatch(/PathPrefix \/\s+backend:version=v1 90%, backend:version=v2 10%\s+MeshHTTPRoute web-backend-canary\s+MeshHTTPRoute backend-v1-by-default/);
    expect(stdout).toMatch(/MeshTimeout http\.requestTimeout\s+15s\s+MeshTimeout web-timeouts\s+MeshTimeout 00-base-timeouts, MeshTimeout zz-late-timeouts\s+RouteAction\.timeout/);
    expect(stdout).toMatch(/MeshCircuitBreaker connectionLimits\.maxConnections\s+1024\s+default/);
    expect(stdout).toContain('xds:///backend (gRPC), protocol http');
    expect(stdout).toContain('MeshTimeout connectionTimeout = 5s (MeshTimeout web-timeouts): gRPC ignores Cluster.connect_timeout');
  });

  it('prints the explanation as JSON with -o json, and refuses a node id that names no dataplane', async () => {
    const json = await cli('inspect', 'default.other-1', '--policies', '-o', 'json');
    expect(JSON.parse(json.stdout)).toMatchObject({ node: 'default.other-1', outbounds: [{ service: 'backend' }, { service: 'payments' }] });
    const missing = await cli('inspect', 'default.nobody', '--policies');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('CHANCERY_STORE_NOT_FOUND');
    expect((await cli('inspect', 'no-dot', '--policies')).code).not.toBe(0);
  });
});

describe('I9 in the explanation', () => {
  it('shows a share sent to a subset with no endpoints as an error, and where it went', async () => {
    const split = kuma('meshhttproute-split.yaml');
    split.name = 'payments-canary';
    split.spec.targetRef = { kind: 'MeshService', name: 'other' };
    split.spec.to[0].targetRef.name = 'payments';
    split.spec.to[0].rules[0].default.backendRefs = [
      { kind: 'MeshServiceSubset', name: 'payments', tags: { version: 'v1' }, weight: 90 },
      { kind: 'MeshServiceSubset', name: 'payments', tags: { version: 'v9' }, weight: 10 },
    ];
    await put('/meshes/default/meshhttproutes/payments-canary', split);
    const payments = outboundTo(await explain('other-1'), 'payments');
    expect(payments.errors).toEqual([
      'PathPrefix / (MeshHTTPRoute payments-canary): payments:version=v1 has no endpoints; its share (weight 90) goes to payments',
      'PathPrefix / (MeshHTTPRoute payments-canary): payments:version=v9 has no endpoints; its share (weight 10) goes to payments',
    ]);
    expect(payments.routes[0]).toMatchObject({ match: 'PathPrefix /', backends: [{ cluster: 'payments', weight: 100 }] });
    const text = (await cli('inspect', 'default.other-1', '--policies')).stdout;
    expect(text).toMatch(/ {2}Errors:\n {4}PathPrefix \/ \(MeshHTTPRoute payments-canary\): payments:version=v1 has no endpoints.*\n {4}PathPrefix \/ \(MeshHTTPRoute payments-canary\): payments:version=v9 has no endpoints/);
  });
});

describe('chancery apply warns about a policy that selects no dataplane', () => {
  it('applies it with a warning naming it, and a policy that selects some without one', async () => {
    const lonely = { ...kuma('meshretry.yaml'), name: 'retry-nobody', spec: { ...kuma('meshretry.yaml').spec, targetRef: { kind: 'MeshService', name: 'nobody' } } };
    const warned = await runCli(['apply', '-f', '-', '--api-address', api.address], { stdin: JSON.stringify(lonely) });
    expect(warned).toMatchObject({ code: 0, stdout: 'MeshRetry default/retry-nobody created\n1 resource: 1 created, 0 configured, 0 unchanged, 0 refused\n' });
    expect(warned.stderr).toBe('Warning: MeshRetry default/retry-nobody selects no dataplane of mesh default: it configures nothing until one matches its targetRef\n');
    const quiet = await cli('apply', '-f', path.join(EXAMPLES, 'meshtimeout.yaml'));
    expect(quiet).toMatchObject({ code: 0, stderr: '' });
    const selected = (await (await fetch(`${api.url}/meshes/default/meshtimeouts/timeout-global/_resources/dataplanes`)).json()) as { total: number };
    expect(selected.total).toBe(Object.keys(NODES).length + 3);
  });
});
