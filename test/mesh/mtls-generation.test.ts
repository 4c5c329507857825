import { beforeAll, describe, expect, it } from 'vitest';
import { issueWorkloadCertificate, newMeshAuthority, type IssuedWorkloadCertificate } from '../../src/identity/index.js';
import { generate, generatesAlike } from '../../src/mesh/generator.js';
import { spiffeIdsOf } from '../../src/mesh/mesh-tls.js';
import { serverListenerName } from '../../src/mesh/names.js';
import type { CertificateAuthority, Dataplane, DataplaneTls, InboundTls, Mesh, MtlsMode, Valid } from '../../src/mesh/resources.js';
import type { MeshState } from '../../src/store/types.js';
import { encodeCount, encodeResource } from '../../src/xds/encode.js';
import { ResourceSet } from '../../src/xds/resource-set.js';
import { MissingReferenceError, sealSnapshot, type Snapshot } from '../../src/xds/snapshot.js';
import { CLUSTER, ENDPOINT, LISTENER, PUSH_ORDER, ROUTE, SECRET } from '../../src/xds/type-urls.js';
import { decodeAny } from '../../src/xds/decode.js';
import { meshState, projection, stored, storedDataplane, valid, withDataplane } from './fixtures.js';
import { sendTo, withPolicies } from './policy-fixtures.js';

const NOW = Date.UTC(2026, 11, 5);
let authority: CertificateAuthority;
const certificates = new Map<string, IssuedWorkloadCertificate>();

beforeAll(async () => {
  authority = await newMeshAuthority('default', 'ca-1', NOW);
});

const backend = (name: string, port: number) => storedDataplane({ name, address: '10.0.0.1', inbound: [{ port, servicePort: 9000, tags: { service: 'backend' } }] });
const web = storedDataplane({ name: 'web-1', address: '10.0.0.9', inbound: [{ port: 8080, tags: { service: 'web' } }], outbound: [{ port: 20001, service: 'backend' }] });

function state(mode: MtlsMode, options: { statuses?: Record<string, InboundTls>; authorities?: boolean } = {}): MeshState {
  const mesh = stored(valid({ type: 'Mesh', name: 'default', mtls: { mode, certificateTTL: '1h' } }) as Valid<Mesh>);
  const base = meshState(mesh, [backend('backend-1', 10001), backend('backend-2', 10002), web]);
  const authorities = options.authorities === false ? new Map() : new Map([['ca-1', stored(authority as Valid<CertificateAuthority>)]]);
  const tls = new Map(Object.entries(options.statuses ?? {}).map(([name, inbound]) => [name, status(name, inbound)]));
  return { ...base, authorities, tls };
}

/** The DataplaneTls status of `name`, as its instance writes it once the node ACKed an inbound accepting `inbound`. */
const status = (name: string, inbound: InboundTls) => stored({ type: 'DataplaneTls', mesh: 'default', name, issuer: 'ca-1', trusts: ['ca-1'], inbound } as unknown as Valid<DataplaneTls>);

/** `at` with the statuses of `statuses` written as well: a round of statuses, as the projection folds it. */
const withStatuses = (at: MeshState, statuses: Record<string, InboundTls>): MeshState => ({
  ...at,
  tls: new Map([...at.tls, ...Object.entries(statuses).map(([name, inbound]) => [name, status(name, inbound)] as const)]),
});

async function certificateOf(dataplane: Dataplane): Promise<IssuedWorkloadCertificate> {
  let issued = certificates.get(dataplane.name);
  if (issued === undefined) {
    issued = await issueWorkloadCertificate({ authority, spiffeIds: spiffeIdsOf(dataplane), now: NOW, ttl: 3_600_000 });
    certificates.set(dataplane.name, issued);
  }
  return issued;
}

async function snapshotOf(at: MeshState, name = 'web-1'): Promise<Snapshot> {
  const result = generate(`default.${name}`, projection(7, at), await certificateOf(at.dataplanes.get(name)!.resource));
  if (!result.ok) throw result.error;
  return result.snapshot;
}

const json = (snapshot: Snapshot, typeUrl: (typeof PUSH_ORDER)[number], name: string) => decodeAny(snapshot.types[typeUrl].get(name)!.any) as Record<string, any>;

describe('generating with mTLS', () => {
  it('answers CertificateNeededError, never a configuration, while the node holds no certificate or its mesh no CA', async () => {
    for (const [at, certificate, reason] of [
      [state('strict'), undefined, /holds none yet/],
      [state('strict', { authorities: false }), await certificateOf(web.resource), /CA is being created/],
      [state('permissive'), { ...(await certificateOf(web.resource)), spiffeIds: ['spiffe://default/old'] }, /names spiffe:\/\/default\/old, and it serves spiffe:\/\/default\/web now/],
      [state('permissive'), { ...(await certificateOf(web.resource)), issuer: 'ca-0' }, /CA ca-0 was removed/],
    ] as const) {
      const result = generate('default.web-1', projection(7, at), certificate);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.error).toMatchObject({ code: 'CHANCERY_MESH_CERTIFICATE_NEEDED', message: expect.stringMatching(reason) });
    }
  });

  it('gives a strict node its certificate and the trust bundle as Secrets, named by an inbound requiring client certificates and a cluster checking the service’s SPIFFE ID (I8)', async () => {
    const snapshot = await snapshotOf(state('strict'));
    const secrets = snapshot.types[SECRET].wildcard.list.map((secret) => secret.name);
    expect(secrets).toEqual(['mtls:identity', 'mtls:trust:default']);
    const identity = json(snapshot, SECRET, 'mtls:identity');
    expect(identity.tls_certificate.certificate_chain.inline_string).toBe((await certificateOf(web.resource)).certificate);
    expect(json(snapshot, SECRET, 'mtls:trust:default').validation_context.trusted_ca.inline_string).toBe(`${authority.certificate}\n`);

    const inbound = json(snapshot, LISTENER, 'inbound:10.0.0.9:8080');
    expect(inbound.filter_chains).toHaveLength(1);
    const downstream = inbound.filter_chains[0].transport_socket.typed_config;
    expect(downstream.require_client_certificate).toBe(true);
    expect(downstream.common_tls_context.combined_validation_context.default_validation_context.match_typed_subject_alt_names).toEqual([{ san_type: 'URI', matcher: { prefix: 'spiffe://default/' } }]);
    const cluster = json(snapshot, CLUSTER, 'backend');
    const upstream = cluster.transport_socket.typed_config.common_tls_context;
    expect(upstream.tls_certificate_sds_secret_configs).toEqual([{ name: 'mtls:identity', sds_config: { ads: {}, resource_api_version: 'V3' } }]);
    expect(upstream.combined_validation_context.default_validation_context.match_typed_subject_alt_names).toEqual([{ san_type: 'URI', matcher: { exact: 'spiffe://default/backend' } }]);
    // Every Secret a Listener or Cluster names is in the snapshot: sealSnapshot checked it.
    const named = [LISTENER, CLUSTER].flatMap((typeUrl) => snapshot.types[typeUrl].wildcard.list.flatMap((resource) => resource.secrets));
    expect(new Set(named)).toEqual(new Set(secrets));
  });

  it('in permissive, keeps a client on plaintext to a service until every endpoint reports an inbound that accepts TLS', async () => {
    const plaintext = (at: MeshState) => snapshotOf(at).then((snapshot) => json(snapshot, CLUSTER, 'backend').transport_socket === undefined);
    expect(await plaintext(state('permissive'))).toBe(true);
    expect(await plaintext(state('permissive', { statuses: { 'backend-1': 'permissive' } }))).toBe(true);
    expect(await plaintext(state('permissive', { statuses: { 'backend-1': 'permissive', 'backend-2': 'plaintext' } }))).toBe(true);
    expect(await plaintext(state('permissive', { statuses: { 'backend-1': 'permissive', 'backend-2': 'permissive' } }))).toBe(false);
    // In strict, an endpoint that never reported is new: its first configuration is strict.
    expect(await plaintext(state('strict', { statuses: { 'backend-1': 'strict' } }))).toBe(false);
    expect(await plaintext(state('strict', { statuses: { 'backend-1': 'strict', 'backend-2': 'plaintext' } }))).toBe(true);
    const inbound = json(await snapshotOf(state('permissive')), LISTENER, 'inbound:10.0.0.9:8080');
    expect(inbound.listener_filters.map((filter: { name: string }) => filter.name)).toEqual(['envoy.filters.listener.tls_inspector']);
    expect(inbound.filter_chains.map((chain: any) => chain.filter_chain_match.transport_protocol)).toEqual(['tls', 'raw_buffer']);
  });

  it('names no Secret and sends none with mTLS disabled', async () => {
    const result = generate('default.web-1', projection(7, state('disabled')));
    expect(result.ok && result.snapshot.types[SECRET].size).toBe(0);
    expect(result.ok && json(result.snapshot, CLUSTER, 'backend').transport_socket).toBeUndefined();
  });

  it('renews by the Secret alone: a new certificate changes no Listener or Cluster version', async () => {
    const at = state('strict');
    const first = await snapshotOf(at);
    const renewed = await issueWorkloadCertificate({ authority, spiffeIds: spiffeIdsOf(web.resource), now: NOW + 1_000, ttl: 3_600_000 });
    const result = generate('default.web-1', projection(8, at), renewed);
    if (!result.ok) throw result.error;
    for (const typeUrl of [CLUSTER, ENDPOINT, LISTENER, ROUTE]) expect(result.snapshot.types[typeUrl].version).toBe(first.types[typeUrl].version);
    expect(result.snapshot.types[SECRET].version).not.toBe(first.types[SECRET].version);
  });

  it('encodes a changed Dataplane’s gRPC server listener alone: every other one is kept as it was', async () => {
    const listenerOf = (snapshot: Snapshot, address: string, port: number) => snapshot.types[LISTENER].get(serverListenerName(address, port));
    const at = state('strict');
    await snapshotOf(at);
    const moved = withDataplane(at, backend('backend-2', 10003));
    const encoded = encodeCount();
    const after = await snapshotOf(moved);
    // Its new server listener and backend's ClusterLoadAssignment; not the mesh's other server listeners again.
    expect(encodeCount() - encoded).toBe(2);
    expect(listenerOf(after, '10.0.0.1', 10002)).toBeUndefined();
    expect(listenerOf(after, '10.0.0.1', 10003)).toBeDefined();
  });
});

describe('which store changes make nodes generate anew (generatesAlike)', () => {
  it('not a round of statuses that leaves every client’s TLS as it was; one that changes how a client reaches a service, and any other write', async () => {
    const before = state('strict', { statuses: { 'backend-1': 'strict' } });
    const versions = (snapshot: Snapshot) => PUSH_ORDER.map((typeUrl) => snapshot.types[typeUrl].version);
    // The fleet ACKs what it was sent, as in a storm of a new strict mesh: no client's TLS changes, and every node is generated the same.
    const reported = withStatuses(before, { 'web-1': 'strict', 'backend-2': 'strict' });
    expect(generatesAlike(projection(7, before), projection(8, reported))).toBe(true);
    expect(versions(await snapshotOf(reported))).toEqual(versions(await snapshotOf(before)));
    // backend-2 reports a plaintext inbound: web-1's cluster to backend falls back to plaintext.
    const backendPlaintext = withStatuses(reported, { 'backend-2': 'plaintext' });
    expect(generatesAlike(projection(8, reported), projection(9, backendPlaintext))).toBe(false);
    expect(json(await snapshotOf(backendPlaintext), CLUSTER, 'backend').transport_socket).toBeUndefined();
    // Any other write is news, whatever it changes.
    expect(generatesAlike(projection(7, before), projection(8, withDataplane(before, backend('backend-3', 10003))))).toBe(false);
    expect(generatesAlike(projection(7, before), projection(8, { ...before, authorities: new Map(before.authorities) }))).toBe(false);
    expect(generatesAlike(projection(7, before), projection(8))).toBe(false);
    expect(generatesAlike(projection(7, before), projection(8, before))).toBe(true);
    // Without mTLS a node's TLS facts are recorded only while it has a status: a first status is news.
    const disabled = state('disabled');
    expect(generatesAlike(projection(7, disabled), projection(8, withStatuses(disabled, { 'web-1': 'plaintext' })))).toBe(false);
  });
});

describe('TLS to a service a route sends to', () => {
  it('is given as to the outbound’s own service: a MeshHTTPRoute sending web’s calls to backend on to another service keeps mTLS', async () => {
    const mesh = stored(valid({ type: 'Mesh', name: 'default', mtls: { mode: 'strict', certificateTTL: '1h' } }) as Valid<Mesh>);
    const http = (name: string, service: string, port: number) => storedDataplane({ name, address: '10.0.0.1', inbound: [{ port, servicePort: 9000, tags: { service, protocol: 'http' } }] });
    const base = meshState(mesh, [http('backend-1', 'backend', 10001), http('other-1', 'other', 10002), web]);
    const at = withPolicies({ ...base, authorities: new Map([['ca-1', stored(authority as Valid<CertificateAuthority>)]]) }, [sendTo('to-other', 'backend', 'other')]);
    const snapshot = await snapshotOf(at);
    expect(snapshot.types[CLUSTER].wildcard.get('other')).toBeDefined();
    const socket = json(snapshot, CLUSTER, 'other').transport_socket;
    expect(socket?.typed_config?.common_tls_context?.combined_validation_context?.default_validation_context?.match_typed_subject_alt_names).toEqual([
      { san_type: 'URI', matcher: { exact: 'spiffe://default/other' } },
    ]);
  });
});

describe('I8 by construction', () => {
  it('refuses to seal a Listener or Cluster naming a Secret the snapshot lacks', () => {
    const cluster = encodeResource(CLUSTER, 'backend', { name: 'backend', type: 'STATIC', connect_timeout: { seconds: 1 } }, [], ['mtls:identity']);
    const result = sealSnapshot({
      node: 'default.web-1',
      revision: 3,
      types: {
        [CLUSTER]: { wildcard: new ResourceSet([cluster]), named: [] },
        [ENDPOINT]: { wildcard: ResourceSet.empty, named: [] },
        [LISTENER]: { wildcard: ResourceSet.empty, named: [] },
        [ROUTE]: { wildcard: ResourceSet.empty, named: [] },
        [SECRET]: { wildcard: ResourceSet.empty, named: [] },
      },
    });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toBeInstanceOf(MissingReferenceError);
    expect(!result.ok && result.error).toMatchObject({ typeUrl: SECRET, missing: ['mtls:identity'], message: expect.stringContaining('(I8)') });
  });
});
