import { ChanceryError } from '../common/index.js';
import type { CertificateAuthority } from '../mesh/index.js';
import { EC_P256, newEcKeyPair, privateKeyPem, randomSerial, signingKeyOf, x509 } from './x509.js';

/**
 * How far back a certificate's `notBefore` is set from the clock that issued it: instances and
 * dataplanes whose clocks differ by less accept it at once (Kuma backdates its CA by 10 s too).
 */
export const CLOCK_SKEW_MS = 10_000;

/** A workload certificate as issued: its PEM and what inspection and renewal need of it. */
export interface WorkloadCertificate {
  /** PEM: the certificate alone (the CA is in the mesh's trust bundle). */
  readonly certificate: string;
  /** The URI SANs it carries, sorted. */
  readonly spiffeIds: readonly string[];
  /** Hex. */
  readonly serial: string;
  /** The id of the CA that signed it. */
  readonly issuer: string;
  /** Epoch ms. */
  readonly notBefore: number;
  readonly notAfter: number;
}

/** A certificate with the private key Chancery made for it (for Envoy, whose key it sends by SDS). */
export interface IssuedWorkloadCertificate extends WorkloadCertificate {
  /** PKCS #8 PEM. */
  readonly privateKey: string;
}

export interface WorkloadCertificateRequest {
  readonly authority: CertificateAuthority;
  /** The URI SANs, `spiffe://<mesh>/<service>` (mesh-tls.ts `spiffeIdsOf`). */
  readonly spiffeIds: readonly string[];
  /** Epoch ms, from the caller's clock: the certificate is valid from `now - CLOCK_SKEW_MS` to `now + ttl`. */
  readonly now: number;
  /** ms. */
  readonly ttl: number;
}

/**
 * Issues a workload certificate and its key (ECDSA P-256): one URI SAN per SPIFFE ID, usable as
 * server and as client (mTLS both ways), signed by `authority`. Pure but for the key and the
 * serial, which are random; the clock is the caller's.
 */
export async function issueWorkloadCertificate(request: WorkloadCertificateRequest): Promise<IssuedWorkloadCertificate> {
  const keys = await newEcKeyPair();
  const signed = await sign(request, keys.publicKey);
  return { ...signed, privateKey: await privateKeyPem(keys.privateKey) };
}

/** A CSR that cannot be signed: malformed, not proving its key, or asking for names the dataplane may not have. */
export class InvalidCertificateRequestError extends ChanceryError {
  readonly code = 'CHANCERY_IDENTITY_INVALID_CSR';
  readonly field = 'csr';
  constructor(reason: string) {
    super(`the certificate signing request ${reason}`);
  }
}

/**
 * Signs a PKCS #10 CSR (from `chancery agent`, whose key never leaves its host): it must be PEM,
 * signed by its own key (proof of possession), for an ECDSA P-256 key, and ask only for URI SANs
 * among `request.spiffeIds`, the ones the dataplane may have; asking for none gets them all.
 * Rejects with `InvalidCertificateRequestError` saying which rule it breaks.
 */
export async function signCertificateRequest(csrPem: string, request: WorkloadCertificateRequest): Promise<WorkloadCertificate> {
  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(csrPem);
  } catch {
    throw new InvalidCertificateRequestError('is not a PEM PKCS #10 request');
  }
  const { algorithm } = csr.publicKey;
  if (algorithm.name !== 'ECDSA' || (algorithm as { namedCurve?: string }).namedCurve !== EC_P256.namedCurve) {
    throw new InvalidCertificateRequestError(`is for a ${algorithm.name} key; Chancery signs ECDSA P-256 keys only`);
  }
  let verified = false;
  try {
    verified = await csr.verify();
  } catch {
    // A signature that cannot even be checked is as bad as one that does not verify.
  }
  if (!verified) throw new InvalidCertificateRequestError('is not signed by the key it names (no proof of possession)');
  const requested = requestedNames(csr);
  const allowed = new Set(request.spiffeIds);
  const refused = requested.find((name) => name.type !== 'url' || !allowed.has(name.value));
  if (refused !== undefined) {
    throw new InvalidCertificateRequestError(
      `asks for ${refused.type === 'url' ? `"${refused.value}"` : `a ${refused.type} name`}; this dataplane may have only ${[...allowed].join(', ')}`,
    );
  }
  const spiffeIds = requested.length === 0 ? request.spiffeIds : requested.map((name) => name.value);
  return sign({ ...request, spiffeIds }, csr.publicKey);
}

/** The OID of the subjectAltName extension (RFC 5280 §4.2.1.6). */
const SUBJECT_ALT_NAME = '2.5.29.17';

function requestedNames(csr: x509.Pkcs10CertificateRequest): readonly { readonly type: string; readonly value: string }[] {
  const extension = csr.getExtension(SUBJECT_ALT_NAME);
  if (extension === null) return [];
  return new x509.SubjectAlternativeNameExtension(extension.rawData).names.toJSON();
}

async function sign(request: WorkloadCertificateRequest, publicKey: x509.PublicKeyType): Promise<WorkloadCertificate> {
  const { authority, now, ttl } = request;
  const spiffeIds = [...new Set(request.spiffeIds)].sort();
  const issuer = issuerOf(authority);
  const signing = await signingKeyOf(authority.privateKey);
  const serial = randomSerial();
  const notBefore = now - CLOCK_SKEW_MS;
  const notAfter = now + ttl;
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serial,
    // SPIFFE X.509-SVIDs are identified by their URI SAN; the subject only says whose they are.
    subject: [{ O: ['chancery'] }, { OU: [authority.mesh] }],
    issuer: issuer.subjectName,
    notBefore: new Date(notBefore),
    notAfter: new Date(notAfter),
    publicKey,
    signingKey: signing.key,
    signingAlgorithm: signing.algorithm,
    extensions: [...WORKLOAD_EXTENSIONS, new x509.SubjectAlternativeNameExtension(spiffeIds.map((value) => ({ type: 'url' as const, value }))), await authorityKeyIdOf(authority, issuer)],
  });
  // The serial as the certificate carries it (DER drops leading zero bytes).
  return { certificate: certificate.toString('pem'), spiffeIds, serial: certificate.serialNumber, issuer: authority.name, notBefore, notAfter };
}

/** What every workload certificate says beside its names: not a CA, signing only, for server and client. */
const WORKLOAD_EXTENSIONS: readonly x509.Extension[] = [
  new x509.BasicConstraintsExtension(false, undefined, true),
  new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
  new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
];

// Made once per CA (a hash of its key): the same in every certificate it signs.
const authorityKeyIds = new WeakMap<CertificateAuthority, Promise<x509.AuthorityKeyIdentifierExtension>>();

function authorityKeyIdOf(authority: CertificateAuthority, issuer: x509.X509Certificate): Promise<x509.AuthorityKeyIdentifierExtension> {
  let extension = authorityKeyIds.get(authority);
  if (extension === undefined) {
    extension = x509.AuthorityKeyIdentifierExtension.create(issuer);
    authorityKeyIds.set(authority, extension);
  }
  return extension;
}

// A CA's certificate is parsed once: it is the issuer of every certificate of its mesh.
const issuers = new WeakMap<CertificateAuthority, x509.X509Certificate>();

function issuerOf(authority: CertificateAuthority): x509.X509Certificate {
  let issuer = issuers.get(authority);
  if (issuer === undefined) {
    issuer = new x509.X509Certificate(authority.certificate);
    issuers.set(authority, issuer);
  }
  return issuer;
}
