import type { FastifyInstance } from 'fastify';
import { DataplaneUnauthenticatedError, InvalidCertificateRequestError, recordAgentCertificate, signDataplaneCertificate } from '../identity/index.js';
import { nodeIdOf } from '../mesh/index.js';
import { NotFoundError } from '../store/index.js';
import type { ApiBackend } from './api-backend.js';
import { fieldsOf } from './request-fields.js';
import { isoTime } from '../common/index.js';

/** The route a dataplane's own agent calls; the API's token gate leaves it to the dataplane's credentials (access.ts). */
export const CERTIFICATE_ROUTE = '/meshes/:mesh/dataplanes/:name/certificate';

interface DataplaneParams {
  readonly mesh: string;
  readonly name: string;
}

/**
 * `POST /meshes/{mesh}/dataplanes/{name}/certificate` with `{ "csr": PEM }`: signs the CSR of
 * `chancery agent` for proxyless gRPC (docs/mtls.md). The caller proves it is the dataplane as on
 * its xDS stream (its token or service account's JWT, when its mesh asks), and sends only the
 * public half of its key: the answer holds the certificate and the trust bundle, never a key.
 */
export function registerCertificateRoutes(app: FastifyInstance, backend: Pick<ApiBackend, 'store' | 'now'> & Required<Pick<ApiBackend, 'dataplanes'>>): void {
  app.post<{ Params: DataplaneParams }>(CERTIFICATE_ROUTE, async (request, reply) => {
    const { csr } = fieldsOf(request.body, ['csr']);
    if (typeof csr !== 'string') throw new InvalidCertificateRequestError('must be given as "csr", a PEM string');
    const { mesh, name } = request.params;
    const state = backend.store.projection.meshes.get(mesh);
    if (state === undefined) throw new NotFoundError({ type: 'Mesh', mesh, name: mesh });
    const node = nodeIdOf(mesh, name);
    const admission = await backend.dataplanes.admit(node, request.headers.authorization);
    if (!admission.ok) throw new DataplaneUnauthenticatedError(node, admission.refusal.message);
    const signed = await signDataplaneCertificate(state, name, csr, backend.now());
    await recordAgentCertificate(backend.store, state, name, signed);
    backend.dataplanes.certificateIssued();
    request.log.info({ node, serial: signed.serial, issuer: signed.issuer, notAfter: signed.notAfter }, 'certificate signed for a dataplane’s own key');
    return reply.code(201).send({
      certificate: signed.certificate,
      trustBundle: signed.trustBundle,
      spiffeIds: signed.spiffeIds,
      serial: signed.serial,
      issuer: signed.issuer,
      notAfter: isoTime(signed.notAfter),
      renewAt: isoTime(signed.renewAt),
    });
  });
}
