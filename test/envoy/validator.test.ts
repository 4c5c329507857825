import { describe, expect, it } from 'vitest';
import { envoyBinary, type ConfigDump, type DumpedResource } from '../support/envoy.js';
import type { Harness } from '../support/harness.js';
import { freePort } from '../support/ports.js';
import { sidecarsEach, XDS_MODES, type DataplaneSpec } from '../support/real-clients/sidecar-mesh.js';

/**
 * Real Envoy as an oracle independent of Chancery's own encoder: every kind of resource the
 * generator makes for Envoy is accepted (no `update_rejected`), and what Envoy holds is, resource
 * by resource, what Chancery says it sent (`GET /sessions/{node}/xds`), at the version it sent.
 */

// Fails the file at once, naming the install command, on a machine without Envoy.
envoyBinary();

interface Sent {
  readonly version: string;
  readonly resources: readonly Record<string, unknown>[];
  /** Delta: each resource's own version. */
  readonly versions?: Readonly<Record<string, string>>;
}

/** One endpoint as both sides can state it: Envoy's dump adds its own defaults to each assignment. */
function endpointsOf(assignment: Record<string, unknown>): unknown[] {
  const localities = (assignment['endpoints'] ?? []) as Array<Record<string, any>>;
  return localities.flatMap((locality) =>
    (locality.lb_endpoints ?? []).map((lb: Record<string, any>) => ({
      locality: locality.locality,
      localityWeight: locality.load_balancing_weight,
      address: lb.endpoint.address.socket_address,
      health: lb.health_status ?? 'UNKNOWN',
    })),
  );
}

function byName(resources: readonly DumpedResource[]): Map<string, DumpedResource> {
  return new Map(resources.map((resource) => [resource.name, resource]));
}

describe.each(XDS_MODES)('real Envoy over %s accepts every resource kind Chancery generates for it', (mode) => {
  const sidecars = sidecarsEach(mode);

  it('holds exactly what GET /sessions/{node}/xds says was sent, resource by resource and version by version', async () => {
    // Another dataplane serves `beta`, so an outbound to it has real endpoints.
    const [betaPort, alphaPort, alphaSecondPort, appPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    await sidecars.mesh.put({
      type: 'Dataplane',
      mesh: 'default',
      name: 'other',
      networking: { address: '127.0.0.1', inbound: [{ port: betaPort, tags: { service: 'beta' } }] },
    });
    const everything: DataplaneSpec = {
      type: 'Dataplane',
      mesh: 'default',
      name: 'everything',
      networking: {
        address: '127.0.0.1',
        // Two inbound listeners, one local cluster between them (they share the app's port).
        inbound: [
          { port: alphaPort, servicePort: appPort, tags: { service: 'alpha', version: 'v1' } },
          { port: alphaSecondPort, servicePort: appPort, tags: { service: 'alpha-admin' } },
        ],
        // EDS clusters: one of its own service, one of another dataplane's, one of a service nobody serves yet.
        outbound: [
          { port: await freePort(), service: 'alpha' },
          { port: await freePort(), service: 'beta' },
          { port: await freePort(), service: 'ghost' },
        ],
      },
    };
    const { envoy } = await sidecars.mesh.start(everything, 5);
    await envoy.waitFor('CDS, EDS and LDS applied', async () => {
      const stats = await envoy.stats();
      return (stats.get('listener_manager.lds.update_success') ?? 0) > 0 && ['alpha', 'beta', 'ghost'].every((c) => (stats.get(`cluster.${c}.update_success`) ?? 0) > 0);
    });

    const xds = await sent(sidecars.harness, 'default.everything');
    const stats = await envoy.stats();
    for (const stat of ['listener_manager.lds.update_rejected', 'cluster_manager.cds.update_rejected', 'cluster.alpha.update_rejected', 'cluster.beta.update_rejected', 'cluster.ghost.update_rejected']) {
      expect(stats.get(stat) ?? 0, stat).toBe(0);
    }
    const dump: ConfigDump = await envoy.configDump();
    const sentListeners = xds['LDS']!;
    const sentClusters = xds['CDS']!;
    const sentAssignments = xds['EDS']!;

    // Listeners and clusters: the same names, each the same proto3 JSON at the version it came with.
    for (const [dumped, sentType] of [
      [dump.listeners, sentListeners],
      [dump.clusters, sentClusters],
    ] as const) {
      const held = byName(dumped);
      expect([...held.keys()].sort()).toEqual(sentType.resources.map((resource) => String(resource['name'])).sort());
      for (const resource of sentType.resources) {
        const name = String(resource['name']);
        const holding = held.get(name)!;
        // SotW: the response's version; Delta: the resource's own.
        expect(holding.version, name).toBe(sentType.versions?.[name] ?? sentType.version);
        expect(holding.resource, String(resource['name'])).toEqual(resource);
      }
    }
    expect(sentListeners.resources).toHaveLength(5);
    expect(sentClusters.resources.map((resource) => resource['name']).sort()).toEqual(['alpha', 'beta', 'ghost', `localhost:${appPort}`]);

    // Assignments: Envoy's dump has no version for them and adds its defaults, so the endpoints are compared.
    const heldAssignments = byName(dump.endpoints);
    expect(sentAssignments.resources.map((assignment) => assignment['cluster_name']).sort()).toEqual(['alpha', 'beta', 'ghost']);
    for (const assignment of sentAssignments.resources) {
      const name = String(assignment['cluster_name']);
      expect(endpointsOf(heldAssignments.get(name)!.resource), name).toEqual(endpointsOf(assignment));
    }
    expect(endpointsOf(heldAssignments.get('beta')!.resource)).toEqual([
      { locality: { region: 'default', zone: 'default' }, localityWeight: 1, address: { address: '127.0.0.1', port_value: betaPort }, health: 'HEALTHY' },
    ]);
    expect(endpointsOf(heldAssignments.get('ghost')!.resource)).toEqual([]);
  });
});

/** What Chancery last sent `node`, per short type name. */
async function sent(harness: Harness, node: string): Promise<Record<string, Sent>> {
  const response = await fetch(`http://${harness.api}/sessions/${node}/xds`);
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, Sent>;
}
