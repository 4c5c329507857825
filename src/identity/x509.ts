// @peculiar/x509 resolves its algorithm providers through tsyringe, which needs the Reflect
// metadata API before the library is loaded (its README, "Reflect Polyfill Required").
import 'reflect-metadata';
import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

/**
 * The project's one X.509 library (STYLE "src/policies and mTLS": no second one beside it):
 * certificates, CSRs and their extensions are built with @peculiar/x509 on Node's WebCrypto,
 * or, for the workload certificates a fleet needs by the thousand, with the ASN.1 schema it is
 * built on (@peculiar/asn1-x509) and Node's native signing; never with hand-written ASN.1. This
 * module holds what every certificate Chancery makes shares.
 */
export { x509 };

/** ECDSA on P-256 with SHA-256: every key and signature Chancery makes (reference/mtls.md §7). */
export const EC_P256 = Object.freeze({ name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' });

/** A new P-256 key pair whose private half can be exported (to PEM, for whoever keeps it). */
export function newEcKeyPair(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify']);
}

/** A private key as PKCS #8 PEM. */
export async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** A CA's private key, ready to sign, and the signature algorithm that goes with it. */
export interface CaSigningKey {
  readonly key: webcrypto.CryptoKey;
  readonly algorithm: typeof EC_P256 | typeof RSA_SHA256;
}

/** What a development CA made by Chancery before 0.2 (RSA-2048, `chancery ca init`) signs with. */
const RSA_SHA256 = Object.freeze({ name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' });

// Imported once per PEM string held by a stored CA: a mesh's CA signs every certificate of the mesh.
const signingKeys = new Map<string, Promise<CaSigningKey>>();
const SIGNING_KEYS_KEPT = 64;

/**
 * The signing key of a PKCS #8 PEM: P-256, or RSA for a development CA an earlier Chancery made.
 * Throws when the PEM is neither.
 */
export function signingKeyOf(pem: string): Promise<CaSigningKey> {
  let key = signingKeys.get(pem);
  if (key === undefined) {
    key = importSigningKey(pem);
    // A failed import is not kept: the next call says why again.
    key.catch(() => signingKeys.delete(pem));
    if (signingKeys.size >= SIGNING_KEYS_KEPT) signingKeys.delete(signingKeys.keys().next().value!);
    signingKeys.set(pem, key);
  }
  return key;
}

async function importSigningKey(pem: string): Promise<CaSigningKey> {
  const type = createPrivateKey(pem).asymmetricKeyType;
  const algorithm = type === 'rsa' ? RSA_SHA256 : type === 'ec' ? EC_P256 : undefined;
  if (algorithm === undefined) throw new Error(`the key is ${type ?? 'of an unknown type'}; a CA's key is ECDSA P-256 (or RSA for an older development CA)`);
  const der = x509.PemConverter.decodeFirst(pem);
  return { key: await webcrypto.subtle.importKey('pkcs8', der, algorithm, false, ['sign']), algorithm };
}

/**
 * 16 random bytes in hex, the first in 1–127: a positive serial (RFC 5280 §4.1.2.2) that DER
 * carries as it is, with no leading zero byte dropped or added.
 */
export function randomSerial(): string {
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f || 1;
  return serial.toString('hex');
}
