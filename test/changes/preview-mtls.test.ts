import { beforeAll, describe, expect, it } from 'vitest';
import { impactOf, NO_FACTS, type FleetFacts } from '../../src/changes/index.js';
import { issueWorkloadCertificate, newMeshAuthority } from '../../src/identity/index.js';
import { spiffeIdsOf } from '../../src/mesh/mesh-tls.js';
import type { CertificateAuthority, Mesh, MtlsMode, Valid } from '../../src/mesh/resources.js';
import type { MeshState } from '../../src/store/types.js';
import { meshState, projection, stored, storedDataplane, valid } from '../mesh/fixtures.js';

/**
 * A preview in a mesh with mTLS: the nodes are generated as their sessions would generate them,
 * with the certificate this instance holds or a stand-in for one, so what a write changes is
 * seen (it was not: generation without a certificate failed alike before and after, and every
 * node looked unchanged; switching mTLS off looked like every resource added).
 */

const NOW = Date.UTC(2026, 11, 5);
let authority: CertificateAuthority;
beforeAll(async () => {
  authority = await newMeshAuthority('default', 'ca-1', NOW);
});

const backend = (name: string, port: number) => storedDataplane({ name, address: '10.0.0.1', inbound: [{ port, servicePort: 9000, tags: { service: 'backend' } }] });
const web = storedDataplane({ name: 'web-1', address: '10.0.0.9', inbound: [{ port: 8080, tags: { service: 'web' } }], outbound: [{ port: 20001, service: 'backend' }] });

function state(mode: MtlsMode, dataplanes = [backend('backend-1', 10001), web]): MeshState {
  const mesh = stored(valid({ type: 'Mesh', name: 'default', mtls: { mode, certificateTTL: '1h' } }) as Valid<Mesh>);
  return { ...meshState(mesh, dataplanes), authorities: new Map([['ca-1', stored(authority as Valid<CertificateAuthority>)]]) };
}

const affected = (before: MeshState, after: MeshState, facts: FleetFacts = NO_FACTS) =>
  impactOf(projection(7, before), projection(8, after), facts).nodes.map((node) => [node.node, node.error?.code ?? Object.keys(node.types).sort().join(',')]);

describe('a preview in a mesh with mTLS', () => {
  it('sees a new endpoint reach the node that calls its service, whether or not this instance holds the node’s certificate', async () => {
    const before = state('strict');
    const after = state('strict', [backend('backend-1', 10001), backend('backend-2', 10002), web]);
    expect(affected(before, after)).toEqual([
      ['default.backend-2', 'CDS,LDS,SDS'],
      ['default.web-1', 'EDS'],
    ]);
    const held = await issueWorkloadCertificate({ authority, spiffeIds: spiffeIdsOf(web.resource), now: NOW, ttl: 3_600_000 });
    const facts: FleetFacts = { node: () => undefined, certificate: (node) => (node === 'default.web-1' ? held : undefined) };
    expect(affected(before, after, facts)).toEqual([
      ['default.backend-2', 'CDS,LDS,SDS'],
      ['default.web-1', 'EDS'],
    ]);
  });

  it('sees mTLS switched off as listeners and clusters changed and Secrets removed, not as everything added', () => {
    const changed = impactOf(projection(7, state('strict')), projection(8, state('disabled')), NO_FACTS);
    const web1 = changed.nodes.find((node) => node.node === 'default.web-1')!;
    expect(web1.error).toBeUndefined();
    expect(web1.types['SDS']?.removed.length).toBeGreaterThan(0);
    expect(web1.types['CDS']?.added ?? []).toEqual([]);
    expect(web1.types['CDS']?.changed.length).toBeGreaterThan(0);
  });
});
