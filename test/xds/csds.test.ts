import { createRequire } from 'node:module';
import path from 'node:path';
import { credentials, loadPackageDefinition, type Client, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { envoyHandshake } from '../support/envoy-handshake.js';
import { startHarness, type Harness } from '../support/harness.js';
import { OpenStreams } from '../support/open-streams.js';
import { BACKEND, envoyDataplane } from './fixtures.js';

/**
 * CSDS as standard tooling asks it: a generic gRPC client over Envoy's own csds.proto (loaded
 * with @grpc/proto-loader from the protos grpc-js-xds ships), on the xDS port.
 */
const require = createRequire(import.meta.url);
const deps = path.join(path.dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
const definition = loadSync('envoy/service/status/v3/csds.proto', {
  keepCase: true,
  enums: String,
  longs: String,
  defaults: false,
  oneofs: true,
  includeDirs: ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((dir) => path.join(deps, dir)),
});
type CsdsClient = Client & {
  FetchClientStatus(request: object, callback: (error: ServiceError | null, response?: ClientStatusResponse) => void): void;
  StreamClientStatus(): { write(request: object): void; on(event: string, listener: (value: never) => void): void; end(): void; cancel(): void };
};
type Generic = {
  type_url: string;
  name: string;
  version_info?: string;
  xds_config?: { type_url: string; value: Buffer };
  config_status?: string;
  client_status?: string;
  error_state?: { details: string };
};
type ClientStatusResponse = { config?: Array<{ node: { id: string }; generic_xds_configs?: Generic[] }> };
const Service = (loadPackageDefinition(definition) as any).envoy.service.status.v3.ClientStatusDiscoveryService as new (address: string, creds: unknown) => CsdsClient;

let harness: Harness;
let csds: CsdsClient;
const streams = new OpenStreams(() => harness.xds);
/** backend-1's stream, opened before each test. */
let backendStream: AdsStream;
const REJECTED = 'listener outbound:127.0.0.1:20001: port is taken';

beforeEach(async () => {
  harness = await startHarness();
  await harness.cp.apply(BACKEND);
  await harness.cp.apply(envoyDataplane('web-1'));
  csds = new Service(harness.xds, credentials.createInsecure());
  // web-1 ACKs CDS and EDS and NACKs LDS; backend-1 ACKs CDS.
  await envoyHandshake(streams.sotw(), 'default.web-1', { nackListeners: REJECTED });
  const backend = (backendStream = streams.sotw());
  backend.send({ typeUrl: CLUSTER, nodeId: 'default.backend-1' });
  backend.ack(await backend.nextResponse());
  await until(() => harness.cp.session('default.web-1')?.types['LDS']?.nacked !== undefined && harness.cp.session('default.backend-1')?.types['CDS']?.acked !== undefined);
});

afterEach(async () => {
  streams.closeAll();
  csds.close();
  await harness.stop();
});

async function until(condition: () => boolean): Promise<void> {
  for (let attempt = 0; !condition(); attempt++) {
    if (attempt > 1_000) throw new Error('the sessions never reached the state the test sets up');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

function fetchStatus(request: object): Promise<ClientStatusResponse> {
  return new Promise((resolve, reject) => csds.FetchClientStatus(request, (error, response) => (error ? reject(error) : resolve(response!))));
}

const nodesOf = (response: ClientStatusResponse) => (response.config ?? []).map((config) => config.node.id).sort();

describe('the Client Status Discovery Service', () => {
  it('tells, per node and resource, what was sent at which version and how the node answered', async () => {
    const response = await fetchStatus({});
    expect(nodesOf(response)).toEqual(['default.backend-1', 'default.web-1']);
    const web = response.config!.find((config) => config.node.id === 'default.web-1')!.generic_xds_configs!;
    const view = harness.cp.session('default.web-1')!;
    const of = (typeUrl: string) => web.filter((config) => config.type_url === typeUrl);

    expect(of(CLUSTER).map((c) => [c.name, c.version_info, c.config_status, c.client_status])).toEqual([
      ['backend', view.types['CDS']!.sent!.version, 'SYNCED', 'ACKED'],
      ['localhost:9002', view.types['CDS']!.sent!.version, 'SYNCED', 'ACKED'],
    ]);
    expect(of(CLUSTER)[0]!.xds_config?.type_url).toBe(CLUSTER);
    expect(of(ENDPOINT).map((c) => [c.name, c.config_status, c.client_status])).toEqual([['backend', 'SYNCED', 'ACKED']]);
    expect(of(LISTENER).map((c) => [c.name, c.config_status, c.client_status, c.error_state?.details])).toEqual([
      ['inbound:127.0.0.1:10002', 'ERROR', 'NACKED', REJECTED],
      ['outbound:127.0.0.1:20001', 'ERROR', 'NACKED', REJECTED],
    ]);
  });

  it('tells a Delta node’s versions resource by resource: each as the response that carried it said', async () => {
    await harness.cp.apply(envoyDataplane('web-2', { inbound: [{ port: 10012, servicePort: 9002, service: 'web' }] }));
    const delta = streams.delta();
    delta.send({ typeUrl: CLUSTER, nodeId: 'default.web-2' });
    const clusters = await delta.nextResponse();
    delta.ack(clusters);
    // The app port moves: one new cluster is sent, the other stays at the version first sent.
    await harness.cp.apply(envoyDataplane('web-2', { inbound: [{ port: 10012, servicePort: 9003, service: 'web' }] }));
    const changed = await delta.nextResponse();
    delta.ack(changed);
    expect([changed.resources.map((r) => r.name), changed.removed]).toEqual([['localhost:9003'], ['localhost:9002']]);
    await until(() => harness.cp.session('default.web-2')?.types['CDS']?.acked?.nonce === changed.nonce);

    const response = await fetchStatus({ node_matchers: [{ node_id: { exact: 'default.web-2' } }] });
    const configs = response.config![0]!.generic_xds_configs!.filter((config) => config.type_url === CLUSTER);
    const backend = clusters.resources.find((r) => r.name === 'backend')!;
    expect(configs.map((c) => [c.name, c.version_info, c.config_status, c.client_status])).toEqual([
      ['backend', backend.version, 'SYNCED', 'ACKED'],
      ['localhost:9003', changed.resources[0]!.version, 'SYNCED', 'ACKED'],
    ]);
    // Not the type's version, as over SotW: that is what the last response said of all of them.
    expect(configs.map((c) => c.version_info)).not.toContain(changed.systemVersionInfo);
  });

  it('tells a response the node has not answered yet as STALE and REQUESTED, a later one too after it ACKed an earlier, and a name never sent as NOT_SENT', async () => {
    await harness.cp.apply(envoyDataplane('web-2', { inbound: [{ port: 10012, servicePort: 9012, service: 'web' }] }));
    const stream = streams.sotw();
    stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-2' });
    const first = await stream.nextResponse();
    // EDS for a cluster the node has, and for one that does not exist: only the first can be sent.
    stream.send({ typeUrl: ENDPOINT, resourceNames: ['backend', 'nowhere'] });
    const endpoints = await stream.nextResponse();
    const statusOf = async () => {
      const response = await fetchStatus({ node_matchers: [{ node_id: { exact: 'default.web-2' } }] });
      return response.config![0]!.generic_xds_configs!.map((c) => [c.type_url, c.name, c.version_info ?? '', c.config_status, c.client_status]);
    };

    expect(await statusOf()).toEqual([
      [CLUSTER, 'backend', first.versionInfo, 'STALE', 'REQUESTED'],
      [CLUSTER, 'localhost:9012', first.versionInfo, 'STALE', 'REQUESTED'],
      [ENDPOINT, 'backend', endpoints.versionInfo, 'STALE', 'REQUESTED'],
      [ENDPOINT, 'nowhere', '', 'NOT_SENT', 'REQUESTED'],
    ]);

    stream.ack(first);
    await until(() => harness.cp.session('default.web-2')?.types['CDS']?.acked?.nonce === first.nonce);
    expect((await statusOf()).filter(([typeUrl]) => typeUrl === CLUSTER)).toEqual([
      [CLUSTER, 'backend', first.versionInfo, 'SYNCED', 'ACKED'],
      [CLUSTER, 'localhost:9012', first.versionInfo, 'SYNCED', 'ACKED'],
    ]);

    // The app port moves: a new CDS response, which the node has not answered, though it ACKed the one before.
    await harness.cp.apply(envoyDataplane('web-2', { inbound: [{ port: 10012, servicePort: 9013, service: 'web' }] }));
    await stream.until(() => stream.responses.some((response) => response.typeUrl === CLUSTER && response.nonce !== first.nonce), 'the changed CDS response');
    const changed = stream.responses.find((response) => response.typeUrl === CLUSTER && response.nonce !== first.nonce)!;
    expect((await statusOf()).filter(([typeUrl]) => typeUrl === CLUSTER)).toEqual([
      [CLUSTER, 'backend', changed.versionInfo, 'STALE', 'REQUESTED'],
      [CLUSTER, 'localhost:9013', changed.versionInfo, 'STALE', 'REQUESTED'],
    ]);
  });

  it('tells a Delta response the node has not answered yet as STALE and REQUESTED', async () => {
    await harness.cp.apply(envoyDataplane('web-2', { inbound: [{ port: 10012, servicePort: 9012, service: 'web' }] }));
    const delta = streams.delta();
    delta.send({ typeUrl: CLUSTER, nodeId: 'default.web-2' });
    const clusters = await delta.nextResponse();
    const response = await fetchStatus({ node_matchers: [{ node_id: { exact: 'default.web-2' } }] });
    expect(response.config![0]!.generic_xds_configs!.map((c) => [c.name, c.version_info, c.config_status, c.client_status])).toEqual(
      clusters.resources.map((resource) => [resource.name, resource.version, 'STALE', 'REQUESTED']),
    );
  });

  it('selects nodes by id: exact, prefix, suffix and regular expression, any of them', async () => {
    expect(nodesOf(await fetchStatus({ node_matchers: [{ node_id: { exact: 'default.web-1' } }] }))).toEqual(['default.web-1']);
    expect(nodesOf(await fetchStatus({ node_matchers: [{ node_id: { prefix: 'default.' } }] }))).toEqual(['default.backend-1', 'default.web-1']);
    expect(nodesOf(await fetchStatus({ node_matchers: [{ node_id: { suffix: '-1', ignore_case: true } }, { node_id: { exact: 'nobody' } }] }))).toHaveLength(2);
    expect(nodesOf(await fetchStatus({ node_matchers: [{ node_id: { safe_regex: { regex: 'default\\.back.*' } } }] }))).toEqual(['default.backend-1']);
    expect(nodesOf(await fetchStatus({ node_matchers: [{ node_id: { exact: 'default.nobody' } }] }))).toEqual([]);
  });

  it('leaves resource contents out when asked to', async () => {
    const response = await fetchStatus({ exclude_resource_contents: true });
    const all = response.config!.flatMap((config) => config.generic_xds_configs ?? []);
    expect(all.length).toBeGreaterThan(0);
    expect(all.filter((config) => config.xds_config !== undefined)).toEqual([]);
  });

  it('refuses matchers it cannot evaluate with INVALID_ARGUMENT and a reason', async () => {
    const refused = await fetchStatus({ node_matchers: [{ node_metadatas: [{ path: [{ key: 'k' }], value: { string_match: { exact: 'v' } } }] }] }).catch((error: ServiceError) => error);
    expect(refused).toMatchObject({ code: 3, details: expect.stringContaining('node_metadatas') });
    const badRegex = await fetchStatus({ node_matchers: [{ node_id: { safe_regex: { regex: '(' } } }] }).catch((error: ServiceError) => error);
    expect(badRegex).toMatchObject({ code: 3, details: expect.stringContaining('safe_regex') });
  });

  it('answers each request of a stream, as status changes', async () => {
    const stream = csds.StreamClientStatus();
    const answers: ClientStatusResponse[] = [];
    const waiters: Array<() => void> = [];
    stream.on('data', (response: never) => {
      answers.push(response);
      for (const wake of waiters.splice(0)) wake();
    });
    const next = async (count: number) => {
      while (answers.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
      return answers[count - 1]!;
    };
    stream.write({ node_matchers: [{ node_id: { exact: 'default.backend-1' } }] });
    expect(nodesOf(await next(1))).toEqual(['default.backend-1']);
    backendStream.close();
    await until(() => harness.cp.session('default.backend-1')?.state === 'disconnected');
    stream.write({ node_matchers: [{ node_id: { exact: 'default.backend-1' } }] });
    // A disconnected node holds nothing Chancery can vouch for.
    expect(nodesOf(await next(2))).toEqual([]);
    stream.end();
  });
});
