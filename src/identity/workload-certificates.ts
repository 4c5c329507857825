import { createPrivateKey, generateKeyPairSync, sign as nodeSign, type KeyObject } from 'node:crypto';
import { ECParameters, id_ecdsaWithSHA256, id_ecPublicKey, id_secp256r1 } from '@peculiar/asn1-ecc';
import { id_sha256WithRSAEncryption } from '@peculiar/asn1-rsa';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import * as asn1 from '@peculiar/asn1-x509';
import { ChanceryError, memoised } from '../common/index.js';
import type { CertificateAuthority } from '../mesh/index.js';
import { EC_P256, randomSerial, x509 } from './x509.js';

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
 * serial, which are random; the clock is the caller's. Synchronous: about 0.9 ms of CPU
 * (bench/README.md).
 */
export function issueWorkloadCertificate(request: WorkloadCertificateRequest): IssuedWorkloadCertificate {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: EC_P256.namedCurve });
  const signed = sign(request, ecPublicKeyInfo(publicKey));
  return { ...signed, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
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
  return sign({ ...request, spiffeIds }, AsnConvert.parse(csr.publicKey.rawData, asn1.SubjectPublicKeyInfo));
}

function requestedNames(csr: x509.Pkcs10CertificateRequest): readonly { readonly type: string; readonly value: string }[] {
  const extension = csr.getExtension(asn1.id_ce_subjectAltName);
  if (extension === null) return [];
  return new x509.SubjectAlternativeNameExtension(extension.rawData).names.toJSON();
}

/**
 * Builds and signs the certificate with @peculiar/x509's own ASN.1 schema (@peculiar/asn1-x509)
 * and Node's native signing: `X509CertificateGenerator` signs through WebCrypto's thread pool
 * and parses back what it built (a certificate and its key cost 2.7 ms of CPU with it, 0.9 so).
 * What is the same in every certificate of a CA (its name, key id, the fixed extensions) is
 * made once.
 */
function sign(request: WorkloadCertificateRequest, subjectPublicKeyInfo: asn1.SubjectPublicKeyInfo): WorkloadCertificate {
  const { authority, now, ttl } = request;
  const spiffeIds = [...new Set(request.spiffeIds)].sort();
  const issuer = issuerOf(authority);
  const serial = randomSerial();
  const notBefore = now - CLOCK_SKEW_MS;
  const notAfter = now + ttl;
  const tbsCertificate = new asn1.TBSCertificate({
    version: asn1.Version.v3,
    serialNumber: ownBuffer(Buffer.from(serial, 'hex')),
    signature: issuer.signatureAlgorithm,
    issuer: issuer.name,
    validity: new asn1.Validity({ notBefore: new Date(notBefore), notAfter: new Date(notAfter) }),
    subject: subjectOf(authority.mesh),
    subjectPublicKeyInfo,
    extensions: new asn1.Extensions([...WORKLOAD_EXTENSIONS, issuer.keyIdentifier, subjectAltNameOf(spiffeIds)]),
  });
  const signatureValue = ownBuffer(nodeSign('sha256', Buffer.from(AsnConvert.serialize(tbsCertificate)), issuer.key));
  const der = AsnConvert.serialize(new asn1.Certificate({ tbsCertificate, signatureAlgorithm: issuer.signatureAlgorithm, signatureValue }));
  return { certificate: x509.PemConverter.encode(der, 'CERTIFICATE'), spiffeIds, serial, issuer: authority.name, notBefore, notAfter };
}

/** A P-256 public key as a certificate carries it: the curve, and the point uncompressed (SEC 1 §2.3.3). */
function ecPublicKeyInfo(key: KeyObject): asn1.SubjectPublicKeyInfo {
  // JWK, not SPKI: OpenSSL's SPKI encoder costs 0.1 ms a key, a fifth of a certificate.
  const { x, y } = key.export({ format: 'jwk' });
  const point = Buffer.concat([UNCOMPRESSED_POINT, Buffer.from(x!, 'base64url'), Buffer.from(y!, 'base64url')]);
  return new asn1.SubjectPublicKeyInfo({ algorithm: P256_PUBLIC_KEY, subjectPublicKey: ownBuffer(point) });
}

const UNCOMPRESSED_POINT = Buffer.of(0x04);
const P256_PUBLIC_KEY = new asn1.AlgorithmIdentifier({ algorithm: id_ecPublicKey, parameters: AsnConvert.serialize(new ECParameters({ namedCurve: id_secp256r1 })) });

/** The bytes in an ArrayBuffer of their own, as the schema takes them (a small Buffer shares Node's pool). */
function ownBuffer(bytes: Buffer): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

/** One URI SAN per SPIFFE ID. */
function subjectAltNameOf(spiffeIds: readonly string[]): asn1.Extension {
  const names = new asn1.SubjectAlternativeName(spiffeIds.map((uniformResourceIdentifier) => new asn1.GeneralName({ uniformResourceIdentifier })));
  return new asn1.Extension({ extnID: asn1.id_ce_subjectAltName, critical: false, extnValue: new OctetString(AsnConvert.serialize(names)) });
}

// SPIFFE X.509-SVIDs are identified by their URI SAN; the subject only says whose they are.
const subjects = new Map<string, asn1.Name>();
const subjectOf = (mesh: string): asn1.Name =>
  memoised(subjects, mesh, () => AsnConvert.parse(new x509.Name([{ O: ['chancery'] }, { OU: [mesh] }]).toArrayBuffer(), asn1.Name));

/** What every workload certificate says beside its names: not a CA, signing only, for server and client. */
const WORKLOAD_EXTENSIONS: readonly asn1.Extension[] = [
  new x509.BasicConstraintsExtension(false, undefined, true),
  new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
  new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
].map((extension) => AsnConvert.parse(extension.rawData, asn1.Extension));

/** What a CA puts in every certificate it signs, and the key it signs with. */
interface Issuer {
  readonly name: asn1.Name;
  readonly keyIdentifier: asn1.Extension;
  readonly signatureAlgorithm: asn1.AlgorithmIdentifier;
  readonly key: KeyObject;
}

// Made once per CA: it signs every certificate of its mesh.
const issuers = new WeakMap<CertificateAuthority, Issuer>();

function issuerOf(authority: CertificateAuthority): Issuer {
  let issuer = issuers.get(authority);
  if (issuer === undefined) {
    const certificate = new x509.X509Certificate(authority.certificate);
    const key = createPrivateKey(authority.privateKey);
    const keyIdentifier = AsnConvert.parse(new x509.AuthorityKeyIdentifierExtension(subjectKeyIdOf(certificate)).rawData, asn1.Extension);
    issuer = { name: AsnConvert.parse(certificate.subjectName.toArrayBuffer(), asn1.Name), keyIdentifier, signatureAlgorithm: signatureAlgorithmOf(key), key };
    issuers.set(authority, issuer);
  }
  return issuer;
}

/** The CA's subject key identifier, which its certificates name as their authority's (RFC 5280 §4.2.1.1). */
function subjectKeyIdOf(certificate: x509.X509Certificate): string {
  const extension = certificate.getExtension(x509.SubjectKeyIdentifierExtension);
  if (extension === null) throw new Error(`the CA certificate ${certificate.subject} has no subject key identifier`);
  return extension.keyId;
}

/** ECDSA with SHA-256 for a P-256 CA; SHA-256 with RSA for a development CA an earlier Chancery made. */
function signatureAlgorithmOf(key: KeyObject): asn1.AlgorithmIdentifier {
  if (key.asymmetricKeyType === 'ec') return new asn1.AlgorithmIdentifier({ algorithm: id_ecdsaWithSHA256 });
  if (key.asymmetricKeyType === 'rsa') return new asn1.AlgorithmIdentifier({ algorithm: id_sha256WithRSAEncryption, parameters: null });
  throw new Error(`a CA's key is ECDSA P-256 (or RSA for an older development CA), not ${key.asymmetricKeyType ?? 'of an unknown type'}`);
}
