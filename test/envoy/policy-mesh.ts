import type { XdsMode } from '../../src/mesh/index.js';
import type { Harness } from '../support/harness.js';
import type { EnvoyProcess } from '../support/envoy.js';
import { startScriptedBackend, type ScriptedBackend } from '../support/scripted-http-backend.js';
import { freePort } from '../support/ports.js';
import { SidecarMesh, type Sidecar } from '../support/real-clients/sidecar-mesh.js';

/**
 * The topology the Kuma examples in shared/reference/kuma-examples are written for: a client
 * sidecar `frontend-1` (service frontend, tag app: frontend) calling service `echo`, served by
 * two backends tagged version v1 and one tagged v2, all speaking HTTP behind Envoy inbounds.
 */
export interface PolicyMesh {
  readonly sidecars: SidecarMesh;
  /** The client sidecar; requests to 127.0.0.1:`port` go to service echo. */
  readonly client: Sidecar & { readonly port: number };
  readonly backends: readonly (Sidecar & { readonly app: ScriptedBackend; readonly version: string })[];
}

export const CLIENT = 'frontend-1';

export async function startPolicyMesh(harness: Harness, mode: XdsMode = 'sotw'): Promise<PolicyMesh> {
  const sidecars = new SidecarMesh(harness.api, harness.xds, mode);
  const backends = [];
  for (const [name, version] of [
    ['echo-v1a', 'v1'],
    ['echo-v1b', 'v1'],
    ['echo-v2', 'v2'],
  ] as const) {
    const app = await startScriptedBackend(name);
    const sidecar = await sidecars.start(
      {
        type: 'Dataplane',
        mesh: 'default',
        name,
        networking: { address: '127.0.0.1', inbound: [{ port: await freePort(), servicePort: app.port, tags: { service: 'echo', version, protocol: 'http' } }] },
      },
      1,
    );
    backends.push({ ...sidecar, app, version });
  }
  const port = await freePort();
  const sidecar = await sidecars.start(
    {
      type: 'Dataplane',
      mesh: 'default',
      name: CLIENT,
      networking: {
        address: '127.0.0.1',
        inbound: [{ port: await freePort(), servicePort: await freePort(), tags: { service: 'frontend', app: 'frontend', protocol: 'http' } }],
        outbound: [{ port, service: 'echo' }],
      },
    },
    2,
  );
  return { sidecars, client: { ...sidecar, port }, backends };
}

export async function stopPolicyMesh(mesh: PolicyMesh | undefined): Promise<void> {
  if (mesh === undefined) return;
  await mesh.sidecars.stop();
  await Promise.all(mesh.backends.map((backend) => backend.app.stop()));
}

/** Every `…update_rejected` counter of an Envoy (LDS, CDS, and each RDS subscription) that is not 0. */
export async function rejections(envoy: EnvoyProcess): Promise<Record<string, number>> {
  const stats = await envoy.stats();
  return Object.fromEntries([...stats].filter(([name, value]) => name.endsWith('update_rejected') && value !== 0));
}
