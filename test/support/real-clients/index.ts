import { proxylessClients } from './proxyless-mesh.js';
import type { RealClientKind } from './real-client.js';
import { envoyClients } from './sidecar-mesh.js';

export { reaches, SERVICE, type RealBackend, type RealClient, type RealClientKind, type RealMesh, type WipeWatch } from './real-client.js';

/**
 * Every real dataplane Chancery serves, over every xDS protocol it speaks: Envoy over State of
 * the World and Delta, grpc-js-xds and gRPC's C-core (SotW only). A scenario written once runs
 * against each with `describe.each(REAL_CLIENTS)('… $name', …)`.
 */
export const REAL_CLIENTS: readonly RealClientKind[] = [envoyClients('sotw'), envoyClients('delta'), proxylessClients('grpc-js-xds'), proxylessClients('c-core')];
