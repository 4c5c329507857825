import 'reflect-metadata';
import { createPrivateKey, webcrypto, X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { beforeAll, describe, expect, it } from 'vitest';
import { issueWorkloadCertificate, newMeshAuthority, signCertificateRequest } from '../../src/identity/index.js';
import { spiffeIdsOf, type CertificateAuthority, type Dataplane } from '../../src/mesh/index.js';

const NOW = Date.UTC(2026, 11, 5, 12, 0, 0);
const HOUR = 3_600_000;
const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

let authority: CertificateAuthority;
let other: CertificateAuthority;
beforeAll(async () => {
  authority = await newMeshAuthority('default', 'ca-1', NOW);
  other = await newMeshAuthority('default', 'ca-2', NOW);
});

function dataplane(name: string, services: readonly string[]): Dataplane {
  const inbound = services.map((service, i) => ({ port: 10_000 + i, servicePort: 9_000 + i, tags: { service } }));
  return { type: 'Dataplane', mesh: 'default', name, networking: { address: '127.0.0.1', inbound, outbound: [] } };
}

function urisOf(pem: string): string[] {
  return (new X509Certificate(pem).subjectAltName ?? '').split(', ').map((entry) => entry.replace(/^URI:/, ''));
}

async function csrFor(names: readonly string[], keys?: webcrypto.CryptoKeyPair): Promise<string> {
  const pair = keys ?? (await crypto.subtle.generateKey(EC, true, ['sign', 'verify']));
  const extensions = names.length === 0 ? [] : [new x509.SubjectAlternativeNameExtension(names.map((value) => ({ type: 'url' as const, value })))];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: 'CN=agent', keys: pair, signingAlgorithm: EC, extensions });
  return csr.toString('pem');
}

describe('SPIFFE IDs of a dataplane', () => {
  it('names each service it serves once, sorted, and a pure client by a path no service can take', () => {
    expect(spiffeIdsOf(dataplane('backend-1', ['web', 'backend', 'web']))).toEqual(['spiffe://default/backend', 'spiffe://default/web']);
    expect(spiffeIdsOf(dataplane('client', []))).toEqual(['spiffe://default/dataplane/client']);
  });
});

describe('a mesh CA', () => {
  it('is a self-signed ECDSA P-256 CA for ten years, naming the mesh in a URI SAN', () => {
    const ca = new X509Certificate(authority.certificate);
    expect(ca.ca).toBe(true);
    expect(ca.verify(ca.publicKey)).toBe(true);
    expect(ca.publicKey.asymmetricKeyDetails).toMatchObject({ namedCurve: 'prime256v1' });
    expect(ca.subjectAltName).toBe('URI:spiffe://default');
    expect(Date.parse(ca.validTo) - NOW).toBeGreaterThan(3_649 * 24 * HOUR);
  });
});

describe('issueWorkloadCertificate', () => {
  it('issues a certificate with one URI SAN per SPIFFE ID, valid from the given clock for the TTL, for server and client, signed by the CA', async () => {
    const ids = spiffeIdsOf(dataplane('backend-1', ['backend', 'web']));
    const issued = await issueWorkloadCertificate({ authority, spiffeIds: ids, now: NOW, ttl: 24 * HOUR });
    const cert = new X509Certificate(issued.certificate);
    expect(urisOf(issued.certificate)).toEqual(['spiffe://default/backend', 'spiffe://default/web']);
    expect(cert.ca).toBe(false);
    expect(cert.verify(new X509Certificate(authority.certificate).publicKey)).toBe(true);
    expect(cert.verify(new X509Certificate(other.certificate).publicKey)).toBe(false);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    expect(Date.parse(cert.validTo)).toBe(NOW + 24 * HOUR);
    expect(Date.parse(cert.validFrom)).toBeLessThanOrEqual(NOW);
    expect(cert.checkPrivateKey(createPrivateKey(issued.privateKey))).toBe(true);
    expect(issued).toMatchObject({ issuer: 'ca-1', spiffeIds: ids, notAfter: NOW + 24 * HOUR, serial: cert.serialNumber.toLowerCase() });
  });

  it('gives each certificate its own key and serial', async () => {
    const request = { authority, spiffeIds: ['spiffe://default/backend'], now: NOW, ttl: HOUR };
    const [a, b] = await Promise.all([issueWorkloadCertificate(request), issueWorkloadCertificate(request)]);
    expect(a.serial).not.toBe(b.serial);
    expect(a.privateKey).not.toBe(b.privateKey);
  });
});

describe('signCertificateRequest', () => {
  const allowed = ['spiffe://default/backend'];
  const request = () => ({ authority, spiffeIds: allowed, now: NOW, ttl: HOUR });

  it('signs the public key of a CSR for the names the dataplane may have, without ever seeing its private key', async () => {
    const keys = await crypto.subtle.generateKey(EC, true, ['sign', 'verify']);
    const signed = await signCertificateRequest(await csrFor(allowed, keys), request());
    const cert = new X509Certificate(signed.certificate);
    const spki = Buffer.from(await crypto.subtle.exportKey('spki', keys.publicKey));
    expect(cert.publicKey.export({ type: 'spki', format: 'der' }).equals(spki)).toBe(true);
    expect(urisOf(signed.certificate)).toEqual(allowed);
    expect(signed).not.toHaveProperty('privateKey');
  });

  it('gives a CSR that asks for no name every name the dataplane may have', async () => {
    expect(urisOf((await signCertificateRequest(await csrFor([]), request())).certificate)).toEqual(allowed);
  });

  it.each([
    ['a name the dataplane may not have', () => csrFor(['spiffe://default/payments']), /asks for "spiffe:\/\/default\/payments"; this dataplane may have only spiffe:\/\/default\/backend/],
    ['text that is not a CSR', async () => 'hello', /is not a PEM PKCS #10 request/],
    [
      'a CSR for an RSA key',
      async () => {
        const rsa = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) };
        const keys = (await crypto.subtle.generateKey(rsa, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
        return (await x509.Pkcs10CertificateRequestGenerator.create({ name: 'CN=agent', keys, signingAlgorithm: rsa })).toString('pem');
      },
      /is for a RSASSA-PKCS1-v1_5 key; Chancery signs ECDSA P-256 keys only/,
    ],
    [
      'a CSR whose signature does not verify',
      async () => {
        const der = Buffer.from(x509.PemConverter.decodeFirst(await csrFor(allowed)));
        der[der.length - 5]! ^= 0xff;
        return x509.PemConverter.encode(der, 'CERTIFICATE REQUEST');
      },
      /is not signed by the key it names/,
    ],
  ])('refuses %s with CHANCERY_IDENTITY_INVALID_CSR', async (_case, csr, reason) => {
    await expect(signCertificateRequest(await csr(), request())).rejects.toMatchObject({ code: 'CHANCERY_IDENTITY_INVALID_CSR', field: 'csr', message: expect.stringMatching(reason) });
  });
});

