import { EC_P256, newEcKeyPair, privateKeyPem, x509 } from './x509.js';

/** A PKCS #10 request and the private key it proves possession of, both PEM. */
export interface CertificateRequest {
  readonly csr: string;
  /** PKCS #8 PEM: it stays on the host that made it (`chancery agent`), never sent. */
  readonly privateKey: string;
}

/**
 * A new P-256 key and a CSR for it, naming no SAN: Chancery gives the certificate the SPIFFE IDs
 * of the dataplane the caller proves to be. Made where the key is to be used.
 */
export async function newCertificateRequest(node: string): Promise<CertificateRequest> {
  const keys = await newEcKeyPair();
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: [{ CN: [node] }], keys, signingAlgorithm: EC_P256 });
  return { csr: csr.toString('pem'), privateKey: await privateKeyPem(keys.privateKey) };
}
