import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';

const DAY = 86_400_000;

/** A certificate and its private key, in PEM. */
export interface CertifiedKey {
  readonly certificate: string;
  readonly privateKey: string;
}

/**
 * A new certificate authority for development (`chancery ca init`): a self-signed RSA-2048
 * certificate that may sign certificates (and nothing below it may), and its key.
 */
export function createCertificateAuthority(options: { readonly name: string; readonly days: number; readonly now?: Date }): CertifiedKey {
  const { publicKey, privateKey, pem } = rsaKeyPair();
  const certificate = certificateFor(publicKey, options);
  const subject = [{ name: 'commonName', value: options.name }];
  certificate.setSubject(subject);
  certificate.setIssuer(subject);
  certificate.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  certificate.sign(privateKey, forge.md.sha256.create());
  return { certificate: forge.pki.certificateToPem(certificate), privateKey: pem };
}

/**
 * A certificate for `hosts` (DNS names and IP addresses; the first is also its common name),
 * signed by `authority`, for a server and as a client certificate (`chancery ca issue`).
 */
export function issueCertificate(
  authority: CertifiedKey,
  options: { readonly hosts: readonly string[]; readonly days: number; readonly now?: Date },
): CertifiedKey {
  const issuer = forge.pki.certificateFromPem(authority.certificate);
  const signingKey = forge.pki.privateKeyFromPem(authority.privateKey);
  const { publicKey, pem } = rsaKeyPair();
  const certificate = certificateFor(publicKey, options);
  certificate.setSubject([{ name: 'commonName', value: options.hosts[0] ?? 'chancery' }]);
  certificate.setIssuer(issuer.subject.attributes);
  certificate.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
    // Types 2 and 7 of RFC 5280's GeneralName: dNSName, iPAddress.
    { name: 'subjectAltName', altNames: options.hosts.map((host) => (isIP(host) === 0 ? { type: 2, value: host } : { type: 7, ip: host })) },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: issuer.generateSubjectKeyIdentifier().getBytes() },
  ]);
  certificate.sign(signingKey, forge.md.sha256.create());
  return { certificate: forge.pki.certificateToPem(certificate), privateKey: pem };
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

/** An RSA-2048 pair made by Node (forge's own generation is pure JavaScript, and slow). */
function rsaKeyPair(): { publicKey: forge.pki.PublicKey; privateKey: forge.pki.rsa.PrivateKey; pem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const key = forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
  return { publicKey: forge.pki.setRsaPublicKey(key.n, key.e), privateKey: key, pem: privateKey };
}

function certificateFor(publicKey: forge.pki.PublicKey, options: { readonly days: number; readonly now?: Date }): forge.pki.Certificate {
  const certificate = forge.pki.createCertificate();
  certificate.publicKey = publicKey;
  // 16 random bytes with the top bit clear: a positive serial, as RFC 5280 requires.
  const serial = randomBytes(16);
  serial[0]! &= 0x7f;
  certificate.serialNumber = serial.toString('hex');
  const notBefore = options.now ?? new Date();
  certificate.validity.notBefore = notBefore;
  certificate.validity.notAfter = new Date(notBefore.getTime() + options.days * DAY);
  return certificate;
}
