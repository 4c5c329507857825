import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';

/** An RSA key pair in PEM, and the id tokens it signs name it by (`kid`). */
export interface KeyPair {
  readonly kid: string;
  /** SPKI PEM. */
  readonly publicKey: string;
  /** PKCS #8 PEM. */
  readonly privateKey: string;
}

/** A new RSA-2048 key pair, with a random 40-hex-digit id (the shape of a Google `private_key_id`). */
export function newKeyPair(): KeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { kid: randomBytes(20).toString('hex'), publicKey, privateKey };
}

// Parsed once per stored key (the projection keeps a resource's object while it is unchanged), and
// forgotten with it: a verification at every stream open would otherwise parse the PEM.
// A signing key holds both halves: one map per half.
const publicKeys = new WeakMap<object, KeyObject>();
const privateKeys = new WeakMap<object, KeyObject>();

function parsedOnce<T extends object>(parsed: WeakMap<object, KeyObject>, holder: T, parse: (holder: T) => KeyObject): KeyObject {
  let key = parsed.get(holder);
  if (key === undefined) {
    key = parse(holder);
    parsed.set(holder, key);
  }
  return key;
}

/** The key object of a stored key's public half. */
export function publicKeyOf(holder: { readonly publicKey: string }): KeyObject {
  return parsedOnce(publicKeys, holder, ({ publicKey }) => createPublicKey(publicKey));
}

/** The key object of a stored key's private half. */
export function privateKeyOf(holder: { readonly privateKey: string }): KeyObject {
  return parsedOnce(privateKeys, holder, ({ privateKey }) => createPrivateKey(privateKey));
}

const KEY_ID = /^[0-9a-f]{40}$/;

/** Why a value is not a key id; the reason a refusal gives. */
export const KEY_ID_RULE = 'must be a key id: 40 lowercase hexadecimal digits';

/** True for a key id as `newKeyPair` makes them: what names every signing and service-account key. */
export function isKeyId(value: string): boolean {
  return KEY_ID.test(value);
}
