import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { EC_P256, newEcKeyPair, privateKeyPem, randomSerial, signingKeyOf, x509 } from './x509.js';

const DAY = 86_400_000;

/** A certificate and its private key, in PEM. */
export interface CertifiedKey {
  readonly certificate: string;
  readonly privateKey: string;
}

/**
 * A new certificate authority for development (`chancery ca init`): a self-signed ECDSA P-256
 * certificate that may sign certificates (and nothing below it may), and its key.
 */
export async function createCertificateAuthority(options: { readonly name: string; readonly days: number; readonly now?: Date }): Promise<CertifiedKey> {
  const keys = await newEcKeyPair();
  const notBefore = options.now ?? new Date();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: [{ CN: [options.name] }],
    notBefore,
    notAfter: new Date(notBefore.getTime() + options.days * DAY),
    keys,
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certificate: certificate.toString('pem'), privateKey: await privateKeyPem(keys.privateKey) };
}

/**
 * A certificate for `hosts` (DNS names and IP addresses; the first is also its common name),
 * signed by `authority`, for a server and as a client certificate (`chancery ca issue`). Rejects
 * when `authority` is not a certificate and its key.
 */
export async function issueCertificate(
  authority: CertifiedKey,
  options: { readonly hosts: readonly string[]; readonly days: number; readonly now?: Date },
): Promise<CertifiedKey> {
  const issuer = new x509.X509Certificate(authority.certificate);
  const signing = await signingKeyOf(authority.privateKey);
  const keys = await newEcKeyPair();
  const notBefore = options.now ?? new Date();
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: [{ CN: [options.hosts[0] ?? 'chancery'] }],
    issuer: issuer.subjectName,
    notBefore,
    notAfter: new Date(notBefore.getTime() + options.days * DAY),
    publicKey: keys.publicKey,
    signingKey: signing.key,
    signingAlgorithm: signing.algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension(options.hosts.map((host) => ({ type: isIP(host) === 0 ? 'dns' : 'ip', value: host }))),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(issuer),
    ],
  });
  return { certificate: certificate.toString('pem'), privateKey: await privateKeyPem(keys.privateKey) };
}

/** The DNS names and IP addresses a PEM certificate is valid for (its subject alternative names). */
export function namesOfCertificate(pem: string | Buffer): string[] {
  const names = new X509Certificate(pem).subjectAltName;
  if (names === undefined) return [];
  return names.split(', ').flatMap((entry) => {
    const match = /^(DNS|IP Address):(.+)$/.exec(entry);
    if (match === null) return [];
    const value = match[2]!;
    // Node spells IPv6 out in full (0:0:0:0:0:0:0:1); a URL's host is the short form (::1).
    return [isIP(value) === 6 ? new URL(`https://[${value}]/`).hostname.slice(1, -1) : value];
  });
}
